package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// funcs are the template functions of every page. Times are shown
// absolute (UTC) with how long ago or from now beside them, relative to
// the page's clock (see the "time" template in partials.html).
func (p *pages) funcs() template.FuncMap {
	return template.FuncMap{
		"rel":       func(t any) string { return relTime(p.h.opts.Now(), asTime(t)) },
		"utc":       func(t any) string { return asTime(t).UTC().Format("2006-01-02 15:04:05.000 UTC") },
		"abs":       func(t any) string { return absTime(asTime(t)) },
		"iso":       func(t any) string { return app.FormatTime(asTime(t)) },
		"hasTime":   func(t any) bool { return !asTime(t).IsZero() },
		"num":       num,
		"age":       age,
		"ago":       ago,
		"dur":       func(d app.Duration) string { return shortDuration(d.D()) },
		"jsonBlock": jsonBlockOf,
		"compact":   compactJSON,
		"status":    func(j *app.Job) string { return jobStatus(j, p.h.opts.Now()) },
		"asset":     p.asset,
		"link":      link,
		"clip":      func(s string, n int) string { return app.TruncateString(s, n) },
		"firstLine": firstLine,
		"reasonText": func(r string) string {
			return reasonText[r]
		},
		"eventClass": eventClass,
		"pct":        func(a, b int64) int64 { return pct(a, b) },
		"dict":       dict,
	}
}

// dict makes a map of its key/value arguments, to hand a template several
// values: {{template "x" (dict "Title" "By queue" "Items" .Queues)}}.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, fmt.Errorf("dict: %d arguments, want key/value pairs", len(kv))
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// asset is the URL of a static file with its hash, so browsers may cache it for good.
func (p *pages) asset(name string) string {
	if f, ok := p.static[name]; ok {
		return "/static/" + name + "?v=" + f.hash
	}
	return "/static/" + name
}

func asTime(v any) time.Time {
	switch t := v.(type) {
	case time.Time:
		return t
	case *time.Time:
		if t != nil {
			return *t
		}
	}
	return time.Time{}
}

// relTime says how long ago (or from now) t is, as a person would, in
// its two largest units rounded at the smaller one (not floored: 1 h 58 min
// 40 s is "in 1 h 59 min", never "in 1 h"): "just now", "40 s ago",
// "in 12 min", "1 h 58 min ago", "in 3 d 4 h". Pages show it beside the
// absolute time (the "time" template), so it never has to carry a date.
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	secs := int64(math.Round(d.Seconds()))
	mins := int64(math.Round(d.Minutes()))
	hours := int64(math.Round(d.Hours()))
	switch {
	case secs < 2:
		return "just now"
	case secs < 60:
		s = fmt.Sprintf("%d s", secs)
	case mins < 60:
		s = fmt.Sprintf("%d min", mins)
	case mins < 24*60:
		s = twoUnits(mins/60, "h", mins%60, "min")
	default:
		s = twoUnits(hours/24, "d", hours%24, "h")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// twoUnits writes "3 d 4 h", or "3 d" when the smaller unit is zero.
func twoUnits(big int64, bigUnit string, small int64, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d %s", big, bigUnit)
	}
	return fmt.Sprintf("%d %s %d %s", big, bigUnit, small, smallUnit)
}

// absTime is the absolute time pages show beside the relative one, in
// UTC to the second: "2026-12-02 05:10:03 UTC" (app.js may rewrite it to
// the browser's zone when the user asks for that).
func absTime(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// num writes an integer with thousands separators: 1,234,567.
func num(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	default:
		return fmt.Sprint(v)
	}
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// age writes a number of seconds as "4m 12s"; zero is "–".
func age(secs float64) string {
	if secs <= 0 {
		return "–"
	}
	return shortDuration(time.Duration(secs * float64(time.Second)))
}

// ago writes an age in seconds as how long ago: "4m 12s ago", or "just now".
func ago(secs float64) string {
	if secs < 2 {
		return "just now"
	}
	return age(secs) + " ago"
}

// shortDuration writes d with its two largest units: "2h 5m", "45s", "250ms".
func shortDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return trimZero(fmt.Sprintf("%dm %ds", int(d.Minutes()), int(d.Seconds())%60))
	case d < 48*time.Hour:
		return trimZero(fmt.Sprintf("%dh %dm", int(d.Hours()), int(d.Minutes())%60))
	}
	return trimZero(fmt.Sprintf("%dd %dh", int(d.Hours()/24), int(d.Hours())%24))
}

func trimZero(s string) string {
	for _, z := range []string{" 0s", " 0m", " 0h"} {
		s = strings.TrimSuffix(s, z)
	}
	return s
}

func pct(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return int64(math.Round(float64(a) * 100 / float64(b)))
}

// jobStatus is the status a person sees: queued jobs waiting for a later
// run_at are "scheduled", or "retrying" when an attempt of theirs failed
// (they wait out its backoff). Once due, both are "queued" again: a worker
// may claim them. (The listing's status=retrying also takes the due ones:
// every queued job with a failed attempt.)
func jobStatus(j *app.Job, now time.Time) string {
	if j.Scheduled(now) {
		if j.Attempts > 0 {
			return "retrying"
		}
		return "scheduled"
	}
	return string(j.Status)
}

var reasonText = map[string]string{
	"max_attempts":      "attempts exhausted",
	"permanent_failure": "permanent failure",
	"lease_expired":     "lease expired",
	"admin_move":        "moved by an operator",
}

func eventClass(typ string) string {
	switch typ {
	case app.EventSucceeded:
		return "ev-ok"
	case app.EventDeadLettered, app.EventLeaseLost, app.EventDLQPurged:
		return "ev-bad"
	case app.EventRetryScheduled, app.EventExpired, app.EventCancelled, app.EventCancelRequest:
		return "ev-warn"
	case app.EventStarted:
		return "ev-run"
	}
	return "ev-info"
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// jsonBlock is a JSON value ready to show: indented, and folded into
// <details> when long.
type jsonBlock struct {
	Text    string
	Null    bool
	Long    bool
	Summary string // a long block's size, for its <summary>
	Preview string // a long block's first lines, shown while folded
}

// foldLines and foldBytes decide when a block is folded.
const (
	foldLines    = 24
	foldBytes    = 2048
	previewLines = 8
)

func jsonBlockOf(raw json.RawMessage) jsonBlock {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return jsonBlock{Text: "null", Null: true}
	}
	text := string(raw)
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") == nil {
		text = string(unescapeHTML(buf.Bytes()))
	}
	return textBlock(text)
}

// unescapeHTML turns the escapes \u003c, \u003e and \u0026 of valid JSON
// back into <, > and &. Go's encoder writes them for <, > and & in
// strings (json.Marshal escapes HTML), so a result stored through it read
// "\u003cb\u003e" where its payload read "<b>"; the page shows both as the
// characters, html/template escaping them (an escaped backslash, \\u003c,
// is left alone: it is text, not an escape).
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch strings.ToLower(string(b[i+2 : i+6])) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1 // any other escape, whole
	}
	return out
}

func textBlock(text string) jsonBlock {
	b := jsonBlock{Text: text}
	n := strings.Count(text, "\n") + 1
	if n > foldLines || len(text) > foldBytes {
		b.Long = true
		b.Summary = fmt.Sprintf("%s lines, %s", num(n), byteSize(len(text)))
		lines := strings.SplitN(text, "\n", previewLines+1)
		b.Preview = app.TruncateString(strings.Join(lines[:min(len(lines), previewLines)], "\n"), 600) + "\n…"
	}
	return b
}

func byteSize(n int) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func compactJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return string(unescapeHTML(buf.Bytes()))
}

// chart is the dashboard's throughput picture: one stacked bar per minute
// of the last hour (completed below, failed above), drawn as SVG by the
// "chart" template from the geometry computed here.
type chart struct {
	W, H           int
	Left, Right    int // the plot's x range
	Top, Bottom    int // the plot's y range (Top < Bottom)
	Bars           []chartBar
	Grid           []chartTick
	XLabels        []chartTick
	Done, Failed   int64 // sums over the hour
	Peak           int64
	Empty          bool
	EmptyX, EmptyY int
	// Label says what the chart shows (its <title>); EmptyText, what an
	// empty one says.
	Label, EmptyText string
}

type chartBar struct {
	X, W         float64
	DoneY, DoneH float64
	FailY, FailH float64
	HitY, HitH   float64
	Title        string
}

type chartTick struct {
	X, Y   float64
	Label  string
	Anchor string
}

// chartMinutes is how many minutes the chart spans.
const chartMinutes = 60

// buildChart lays out counts (any queues; summed per minute) for the
// hour ending at now.
func buildChart(counts []app.MinuteCount, now time.Time) chart {
	c := chart{W: 960, H: 220, Left: 48, Right: 952, Top: 12, Bottom: 192,
		Label: "Completed and failed jobs per minute, last hour", EmptyText: "No jobs finished in the last hour"}
	end := now.UTC().Truncate(time.Minute)
	first := end.Add(-(chartMinutes - 1) * time.Minute)
	done := make([]int64, chartMinutes)
	failed := make([]int64, chartMinutes)
	for _, m := range counts {
		i := int(m.Minute.UTC().Sub(first) / time.Minute)
		if i < 0 || i >= chartMinutes {
			continue
		}
		done[i] += m.Completed
		failed[i] += m.Failed
	}
	for i := range done {
		c.Done += done[i]
		c.Failed += failed[i]
		c.Peak = max(c.Peak, done[i]+failed[i])
	}
	top := niceCeil(c.Peak)
	plotH := float64(c.Bottom - c.Top)
	slot := float64(c.Right-c.Left) / chartMinutes
	gap := math.Max(1, slot*0.18)
	scale := func(n int64) float64 { return float64(n) / float64(top) * plotH }
	for i := range done {
		x := float64(c.Left) + float64(i)*slot
		b := chartBar{X: round1(x + gap/2), W: round1(slot - gap), HitY: float64(c.Top), HitH: plotH}
		dh, fh := scale(done[i]), scale(failed[i])
		if done[i] > 0 {
			dh = math.Max(dh, 1)
		}
		if failed[i] > 0 {
			fh = math.Max(fh, 1)
		}
		b.DoneH, b.DoneY = round1(dh), round1(float64(c.Bottom)-dh)
		b.FailH, b.FailY = round1(fh), round1(float64(c.Bottom)-dh-fh)
		at := first.Add(time.Duration(i) * time.Minute)
		b.Title = fmt.Sprintf("%s UTC: %s completed, %s failed", at.Format("15:04"), num(done[i]), num(failed[i]))
		c.Bars = append(c.Bars, b)
	}
	for k := 0; k <= 4; k++ {
		v := top * int64(k) / 4
		y := float64(c.Bottom) - scale(v)
		c.Grid = append(c.Grid, chartTick{X: float64(c.Left - 8), Y: round1(y), Label: compactNum(v), Anchor: "end"})
	}
	for _, ago := range []int{60, 45, 30, 15, 0} {
		i := chartMinutes - 1 - ago
		anchor := "middle"
		if ago == 60 {
			i, anchor = 0, "start"
		}
		if ago == 0 {
			anchor = "end"
		}
		x := float64(c.Left) + float64(i)*slot + slot/2
		if ago == 60 {
			x = float64(c.Left)
		}
		if ago == 0 {
			x = float64(c.Right)
		}
		label := fmt.Sprintf("%d min ago", ago)
		if ago == 0 {
			label = "now"
		}
		c.XLabels = append(c.XLabels, chartTick{X: round1(x), Y: float64(c.Bottom + 20), Label: label, Anchor: anchor})
	}
	c.Empty = c.Peak == 0
	c.EmptyX, c.EmptyY = (c.Left+c.Right)/2, (c.Top+c.Bottom)/2
	return c
}

// niceCeil is the top of the chart's scale for a peak of n: four grid
// steps of 1, 2 or 5 times a power of ten, reaching at least n.
func niceCeil(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if 4*m*p >= n {
				return 4 * m * p
			}
		}
	}
}

func compactNum(n int64) string {
	switch {
	case n >= 1_000_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 10_000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "k"
	}
	return num(n)
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
