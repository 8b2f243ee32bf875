package ui

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

func TestRelTime(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		0:                                      "just now",
		-1400 * time.Millisecond:               "just now",
		-30 * time.Second:                      "30 s ago",
		40 * time.Second:                       "in 40 s",
		-59*time.Second - 600*time.Millisecond: "1 min ago", // rounds up into minutes
		-3 * time.Minute:                       "3 min ago",
		-3*time.Minute - 40*time.Second:        "4 min ago", // rounded, not floored
		-59*time.Minute - 40*time.Second:       "1 h ago",
		time.Hour + 58*time.Minute:             "in 1 h 58 min", // the example: not "in 1 h"
		time.Hour + 58*time.Minute + 40*time.Second: "in 1 h 59 min",
		-5 * time.Hour: "5 h ago",
		-23*time.Hour - 59*time.Minute - 50*time.Second: "1 d ago",
		-72 * time.Hour:               "3 d ago",
		76*time.Hour + 10*time.Minute: "in 3 d 4 h",
		76*time.Hour + 40*time.Minute: "in 3 d 5 h",
		10 * time.Minute:              "in 10 min",
		-400 * 24 * time.Hour:         "400 d ago",
	} {
		if got := relTime(now, now.Add(d)); got != want {
			t.Errorf("relTime(now%+v) = %q, want %q", d, got, want)
		}
	}
	if got := relTime(now, time.Time{}); got != "never" {
		t.Errorf("relTime(zero) = %q", got)
	}
	if got := absTime(time.Date(2026, 12, 2, 6, 10, 3, 123e6, time.FixedZone("CET", 3600))); got != "2026-12-02 05:10:03 UTC" {
		t.Errorf("absTime = %q, want UTC to the second", got)
	}
}

func TestJobStatus(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status   app.Status
		attempts int
		runAt    time.Duration
		want     string
	}{
		{app.StatusQueued, 0, 0, "queued"},
		{app.StatusQueued, 0, time.Hour, "scheduled"},
		{app.StatusQueued, 1, time.Hour, "retrying"},       // waiting out its backoff
		{app.StatusQueued, 2, -time.Second, "queued"},      // its retry is due
		{app.StatusProcessing, 1, time.Hour, "processing"}, // run_at is no longer a wait
		{app.StatusDone, 1, 0, "done"},
	} {
		j := &app.Job{Status: tc.status, Attempts: tc.attempts, RunAt: now.Add(tc.runAt)}
		if got := jobStatus(j, now); got != tc.want {
			t.Errorf("jobStatus(%s, attempts %d, run_at now%+v) = %q, want %q", tc.status, tc.attempts, tc.runAt, got, tc.want)
		}
	}
}

func TestNumAndDurations(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4200: "-4,200"} {
		if got := num(n); got != want {
			t.Errorf("num(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		250 * time.Millisecond: "250ms", 45 * time.Second: "45s", 90 * time.Second: "1m 30s",
		time.Hour: "1h", 26*time.Hour + 5*time.Minute: "26h 5m", 72 * time.Hour: "3d",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestChart(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 30, 20, 0, time.UTC)
	counts := []app.MinuteCount{
		{Queue: "a", Minute: now.Truncate(time.Minute), Completed: 7, Failed: 1},
		{Queue: "b", Minute: now.Truncate(time.Minute), Completed: 3},
		{Queue: "a", Minute: now.Truncate(time.Minute).Add(-59 * time.Minute), Completed: 2},
		{Queue: "a", Minute: now.Add(-2 * time.Hour), Completed: 1000}, // outside the hour
	}
	c := buildChart(counts, now)
	if len(c.Bars) != chartMinutes || c.Done != 12 || c.Failed != 1 || c.Peak != 11 || c.Empty {
		t.Fatalf("chart: %d bars, done %d, failed %d, peak %d, empty %v", len(c.Bars), c.Done, c.Failed, c.Peak, c.Empty)
	}
	last := c.Bars[chartMinutes-1]
	if last.DoneH <= 0 || last.FailH <= 0 || last.FailY+last.FailH != last.DoneY {
		t.Errorf("last bar: %+v, want failed stacked on completed", last)
	}
	if !strings.Contains(last.Title, "12:30 UTC: 10 completed, 1 failed") {
		t.Errorf("last bar title %q", last.Title)
	}
	if c.Bars[0].DoneH <= 0 || c.Bars[1].DoneH != 0 {
		t.Errorf("first bars: %+v %+v", c.Bars[0], c.Bars[1])
	}
	if top := c.Grid[len(c.Grid)-1].Label; top != "20" {
		t.Errorf("top grid label %q, want 20", top)
	}
	if e := buildChart(nil, now); !e.Empty || len(e.Bars) != chartMinutes {
		t.Errorf("empty chart: %+v", e)
	}
	for n, want := range map[int64]int64{0: 4, 4: 4, 5: 8, 11: 20, 40: 40, 41: 80, 999: 2000} {
		if got := niceCeil(n); got != want {
			t.Errorf("niceCeil(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestJSONBlock(t *testing.T) {
	b := jsonBlockOf(json.RawMessage(`{"a":[1,2]}`))
	if b.Long || b.Text != "{\n  \"a\": [\n    1,\n    2\n  ]\n}" {
		t.Errorf("short block: %+v", b)
	}
	if b := jsonBlockOf(nil); !b.Null || b.Text != "null" {
		t.Errorf("nil block: %+v", b)
	}
	long := jsonBlockOf(json.RawMessage(`[` + strings.Repeat(`1,`, 100) + `1]`))
	if !long.Long || !strings.HasPrefix(long.Summary, "103 lines") || strings.Count(long.Preview, "\n") != previewLines {
		t.Errorf("long block: long %v, summary %q, preview %q", long.Long, long.Summary, long.Preview)
	}
	if b := jsonBlockOf(json.RawMessage(`not json`)); b.Text != "not json" {
		t.Errorf("invalid JSON shown as %q", b.Text)
	}
	// Go's encoder writes <, > and & in strings as \u003c, \u003e and
	// \u0026: shown as the characters (the template escapes them); an
	// escaped backslash before "u003c" is text and stays.
	esc := json.RawMessage(`{"html":"\u003cb\u003eHi\u003C/b\u003E \u0026 \\u003c","n":"\u00e9\n"}`)
	if b := jsonBlockOf(esc); b.Text != "{\n  \"html\": \"<b>Hi</b> & \\\\u003c\",\n  \"n\": \"\\u00e9\\n\"\n}" {
		t.Errorf("escaped HTML in JSON shown as %q", b.Text)
	}
	if got := compactJSON(json.RawMessage(`{"a": "\u003ci\u003e"}`)); got != `{"a":"<i>"}` {
		t.Errorf("compactJSON = %q", got)
	}
}

func TestLocalPath(t *testing.T) {
	for s, want := range map[string]bool{
		"/": true, "/jobs?queue=a": true, "//evil.example": false, "/\\evil.example": false,
		"https://evil.example/": false, "jobs": false, "": false, "/x\r\nSet-Cookie: a=b": false,
	} {
		if got := localPath(s); got != want {
			t.Errorf("localPath(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestReplayInput(t *testing.T) {
	if in, err := replayInput("now", "5m", ""); err != nil || in.Delay != nil || in.RunAt != nil {
		t.Errorf("now: %+v, %v", in, err)
	}
	if in, err := replayInput("later", "90m", ""); err != nil || in.Delay == nil || in.Delay.D() != 90*time.Minute {
		t.Errorf("later in 90m: %+v, %v", in, err)
	}
	in, err := replayInput("later", "", "2026-04-01T08:30")
	if err != nil || in.RunAt == nil || !in.RunAt.Equal(time.Date(2026, 4, 1, 8, 30, 0, 0, time.UTC)) {
		t.Errorf("later at a time: %+v, %v", in, err)
	}
	for _, bad := range [][2]string{{"", ""}, {"5m", "2026-04-01T08:30"}, {"soon", ""}, {"", "tomorrow"}} {
		if _, err := replayInput("later", bad[0], bad[1]); err == nil {
			t.Errorf("replayInput(later, %q, %q): no error", bad[0], bad[1])
		}
	}
}

func TestAgo(t *testing.T) {
	for secs, want := range map[float64]string{0: "just now", 0.0004: "just now", 1.9: "just now", 2: "2s ago", 645.4: "10m 45s ago"} {
		if got := ago(secs); got != want {
			t.Errorf("ago(%v) = %q, want %q", secs, got, want)
		}
	}
}
