package app_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/queuehq/queue/app"
)

func parse(spec string, loc *time.Location) (app.Schedule, error) {
	return cron.ParseStandard("CRON_TZ=" + loc.String() + " " + spec)
}

// A bad key or value stops with the key and its line.
func TestConfigErrorsNameKeyAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		line             int
	}{
		{"unknown key", "[queues.mail]\nmax_attempts = 3\ntimeot = \"5s\"\n", "queues.mail.timeot: unknown key", 3},
		{"unknown section", "[server]\naddr = \"127.0.0.1:1\"\n\n[sever]\nx = 1\n", "sever", 4},
		{"bad duration", "[queues.mail]\ntimeout = \"five seconds\"\n", "invalid duration", 2},
		{"wrong type", "[queues.mail]\nmax_attempts = \"three\"\n", "max_attempts", 2},
		{"out of range", "[defaults]\nretention = \"1h\"\n\n[queues.q]\nmax_attempts = 5000\n", "queues.q.max_attempts: 5000 is not between 1 and 1000", 5},
		{"negative limit", "[queues.q]\nconcurrency = -1\n", "queues.q.concurrency", 2},
		{"bad queue name", "[queues.\"a b\"]\nmax_attempts = 1\n", "invalid queue name", 1},
		{"bad cron", "[[periodic]]\nkind = \"k\"\ncron = \"every tuesday\"\n", "periodic[0].cron: invalid cron schedule", 3},
		{"bad timezone", "[[periodic]]\nkind = \"k\"\ncron = \"@daily\"\ntimezone = \"Mars/Olympus\"\n", "unknown time zone", 4},
		{"unknown periodic key", "[[periodic]]\nkind = \"k\"\ncron = \"@daily\"\n\n[[periodic]]\nkind = \"k2\"\ncron = \"@daily\"\nskip_if_pendng = true\n", "skip_if_pendng: unknown key", 8},
		{"short token", "[[tokens]]\nname = \"ci\"\ntoken = \"short\"\n", "too short", 3},
		{"worker without command", "[[workers]]\nqueue = \"q\"\n", "workers[0].command", 1},
		{"syntax", "[queues.mail\nmax_attempts = 3\n", "to end table name", 2}, // the parser reports the line it stopped on
		{"bad sync", "[server]\nsync = \"sometimes\"\n", "server.sync", 2},
	} {
		_, err := app.ParseConfig("queue.toml", []byte(tc.text), parse)
		var ce *app.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: err %v, want a ConfigError", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || ce.Line != tc.line {
			t.Errorf("%s: %q (line %d), want %q at line %d", tc.name, err, ce.Line, tc.want, tc.line)
		}
	}
}

func TestConfigQueuePolicyMerges(t *testing.T) {
	cfg, err := app.ParseConfig("q.toml", []byte(`
[defaults]
max_attempts = 8
timeout = "1m"

[queues.mail]
max_attempts = 3
retention = "2s"
dlq_retention = "90d"
concurrency = 2
rate = 10
max_queued = 100

[[periodic]]
name = "tick"
cron = "@every 1s"
kind = "tick"
payload = { n = 1, tags = ["a"] }
skip_if_pending = true
`), parse)
	if err != nil {
		t.Fatal(err)
	}
	mail, other := cfg.Queue("mail"), cfg.Queue("other")
	if mail.MaxAttempts != 3 || mail.Timeout.D() != time.Minute || mail.Retention.D() != 2*time.Second ||
		mail.DLQRetention.D() != 90*24*time.Hour || mail.Concurrency != 2 || mail.Rate != 10 || mail.MaxQueued != 100 {
		t.Fatalf("mail policy %+v", mail)
	}
	if other.MaxAttempts != 8 || other.Timeout.D() != time.Minute || other.Retention.D() != 24*time.Hour ||
		other.DLQRetention.D() != 30*24*time.Hour || other.BackoffBase.D() != time.Second || other.BackoffMax.D() != time.Hour {
		t.Fatalf("default policy %+v", other)
	}
	p := cfg.Periodic[0]
	if p.Queue != "default" || p.CatchUp != "one" || !p.SkipIfPending || string(p.PayloadJSON) != `{"n":1,"tags":["a"]}` || p.Schedule == nil {
		t.Fatalf("periodic %+v %s", p, p.PayloadJSON)
	}
	if got := cfg.MaxQueued(); got["mail"] != 100 || len(got) != 1 {
		t.Fatalf("MaxQueued %v", got)
	}
}

func TestBackoffStaysInItsBand(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 13: time.Hour, 100: time.Hour} {
		for i := 0; i < 50; i++ {
			d := app.Backoff(n, 0, 0)
			if d < want*8/10 || d > want*12/10 {
				t.Fatalf("Backoff(%d) = %v, want %v ±20%%", n, d, want)
			}
		}
	}
	if d := app.Backoff(3, 10*time.Millisecond, 25*time.Millisecond); d < 20*time.Millisecond || d > 30*time.Millisecond {
		t.Fatalf("capped backoff %v", d)
	}
}

func TestTransitionTable(t *testing.T) {
	all := []app.Status{app.StatusQueued, app.StatusProcessing, app.StatusDone, app.StatusCancelled}
	legal := map[[2]app.Status]bool{
		{app.StatusQueued, app.StatusProcessing}: true, {app.StatusQueued, app.StatusCancelled}: true,
		{app.StatusProcessing, app.StatusDone}: true, {app.StatusProcessing, app.StatusQueued}: true,
		{app.StatusProcessing, app.StatusCancelled}: true,
	}
	for _, from := range all {
		for _, to := range all {
			err := app.Transition(from, to)
			if ok := legal[[2]app.Status{from, to}] || from == to; ok != (err == nil) {
				t.Errorf("Transition(%s, %s) = %v", from, to, err)
			}
		}
		for _, bad := range []app.Status{"dead_letter", "", "RUNNING", "failed"} {
			if err := app.Transition(from, bad); !errors.Is(err, app.ErrInvalidStatus) {
				t.Errorf("Transition(%s, %q) = %v", from, bad, err)
			}
		}
	}
	if err := app.Transition(app.StatusQueued, "dead_letter"); !strings.Contains(err.Error(), "dead_letter_jobs") {
		t.Errorf("dead_letter message: %v", err)
	}
	if app.InsertStatus(app.StatusQueued) != nil || app.InsertStatus(app.StatusDone) == nil || app.InsertStatus("dead_letter") == nil {
		t.Errorf("InsertStatus allows the wrong statuses")
	}
}

func TestCursorRoundTripsAndRejectsForgeries(t *testing.T) {
	for _, asc := range []bool{true, false} {
		id, gotAsc, err := app.DecodeCursor(app.EncodeCursor(42, asc))
		if err != nil || id != 42 || gotAsc != asc {
			t.Fatalf("round trip: %d %v %v", id, gotAsc, err)
		}
	}
	for _, c := range []string{"", "x", "' OR 1=1 --", "ZDA", "ZC0x", "eDQy", strings.Repeat("A", 100)} {
		if _, _, err := app.DecodeCursor(c); c != "" && err == nil {
			t.Errorf("DecodeCursor(%q) accepted", c)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "90": 90 * time.Second, "7d": 7 * 24 * time.Hour, "1.5": 1500 * time.Millisecond, "250ms": 250 * time.Millisecond} {
		if got, err := app.ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "1e300", "5 seconds", "d"} {
		if _, err := app.ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
}
