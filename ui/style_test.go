package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// durationKeys are the keys whose values are durations in some answer.
var durationKeys = map[string]bool{"timeout": true, "backoff_base": true, "backoff_max": true, "retention": true, "dlq_retention": true}

// freeForm are keys whose values are the client's own JSON, not the API's.
var freeForm = map[string]bool{"payload": true, "result": true, "filter": true, "data": true, "queues": false}

// checkStyle walks an answer: every key is snake_case, every duration is
// written as app.FormatDuration writes it ("30d", "5m"), never "720h0m0s".
func checkStyle(t *testing.T, where string, v any, key string) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			// stats and events name queues by the client's names
			if !snakeCase.MatchString(k) && !(key == "queues" || key == "by_queue") {
				t.Errorf("%s: key %q is not snake_case", where, k)
			}
			if freeForm[k] {
				continue
			}
			checkStyle(t, where, x, k)
		}
	case []any:
		for _, x := range v {
			checkStyle(t, where, x, key)
		}
	case string:
		if durationKeys[key] {
			d, err := app.ParseDuration(v)
			if err != nil || app.FormatDuration(d) != v {
				t.Errorf("%s: %s = %q is not in the API's duration form (want %q)", where, key, v, app.FormatDuration(d))
			}
		}
	}
}

// Every answer of the API speaks one style: snake_case keys and the same
// duration form, GET /api/queues and /api/periodic included.
func TestAnswersUseOneStyle(t *testing.T) {
	cfg := app.DefaultConfig()
	cfg.Queues["mail"] = app.QueueConfig{MaxAttempts: 3, Timeout: app.Duration(5 * time.Minute), DLQRetention: app.Duration(720 * time.Hour)}
	cfg.Periodic = []app.PeriodicConfig{{Name: "nightly", Cron: "@daily", Queue: "mail", Kind: "report", Timeout: app.Duration(10 * time.Minute),
		Schedule: everyHour{}, PayloadJSON: json.RawMessage(`{"a":1}`), Payload: map[string]any{"a": 1}}}
	bus := app.NewBus()
	svc := app.NewService(memory.New(app.StoreOptions{Bus: bus}), cfg, app.SystemClock{}, bus, zerolog.Nop())
	sched := &app.Scheduler{Service: svc}
	if err := sched.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, ui.Options{Service: svc, Scheduler: sched}, false)
	s.submit(`{"queue":"mail","kind":"welcome","payload":{"To":"x"},"timeout":"90s","tags":["a"]}`)
	s.submit(`{"queue":"mail","kind":"welcome"}`)
	j := s.claim("mail")
	s.post(fmt.Sprintf("/api/jobs/%d/fail", num(j, "id")), fmt.Sprintf(`{"lease":%d,"error":"bad","retry":false}`, num(j, "lease")))
	answers := map[string]answer{}
	for _, p := range []string{"/api/jobs", "/api/jobs/1", "/api/jobs/1?events=true", "/api/jobs/1/events", "/api/jobs/2", "/api/dlq",
		"/api/dlq/1", "/api/queues", "/api/stats", "/api/audit", "/api/periodic", "/healthz", "/readyz"} {
		answers["GET "+p] = s.get(p)
	}
	answers["POST claim"] = s.post("/api/queues/mail/claim", `{"limit":5}`)
	answers["POST dry run"] = s.post("/api/dlq/purge", `{"queue":"mail","dry_run":true}`)
	answers["POST drain"] = s.post("/api/queues/mail/drain", `{"dry_run":true}`)
	answers["POST once"] = s.post("/api/once/k", `{}`)
	answers["POST error"] = s.post("/api/jobs", `{"kind":"k","priority":1.5}`)
	for where, a := range answers {
		var v any
		if err := json.Unmarshal(a.body, &v); err != nil {
			t.Errorf("%s: %d, not JSON: %s", where, a.status, a.body)
			continue
		}
		checkStyle(t, where, v, "")
	}
	q := answers["GET /api/queues"].json(t)["queues"].([]any)[0].(map[string]any)["config"].(map[string]any)
	if q["max_attempts"] != float64(3) || q["timeout"] != "5m" || q["dlq_retention"] != "30d" || q["retention"] != "1d" {
		t.Errorf("GET /api/queues config of mail: %v", q)
	}
	p := answers["GET /api/periodic"].json(t)["periodic"].([]any)[0].(map[string]any)
	if p["name"] != "nightly" || p["timeout"] != "10m" || p["next_fire"] == nil {
		t.Errorf("GET /api/periodic: %v", p)
	}
}

type everyHour struct{}

func (everyHour) Next(t time.Time) time.Time { return t.Truncate(time.Hour).Add(time.Hour) }

// A query parameter a route does not take is a 400 naming it, on every
// API route (routes walked from the router); so is one given twice. The
// parameters a route takes still work.
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	s.submit(`{"kind":"k"}`)
	h := ui.New(ui.Options{Service: s.svc})
	n := 0
	for _, r := range ui.Routes(h) {
		if !strings.HasPrefix(r.Path, "/api/") {
			continue
		}
		n++
		path := strings.NewReplacer(":id", "1", ":queue", "default", ":key", "k").Replace(r.Path)
		// A client with a timeout: were the parameter let through, the
		// event stream would answer forever.
		req, _ := http.NewRequest(r.Method, s.url+path+"?qeue=email", strings.NewReader("{}"))
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
		if err != nil {
			t.Errorf("%s %s?qeue=email: %v; want 400 naming qeue", r.Method, r.Path, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"field":"qeue"`) || !strings.Contains(string(body), `unknown query parameter \"qeue\"`) {
			t.Errorf("%s %s?qeue=email: %d %s; want 400 naming qeue", r.Method, r.Path, resp.StatusCode, body)
		}
	}
	if n < 25 {
		t.Fatalf("only %d API routes", n)
	}
	for _, tc := range []struct{ path, field string }{
		{"/api/jobs?queue=a&queue=b", "queue"},
		{"/api/jobs?limit=0", "limit"},
		{"/api/jobs?limit=1001", "limit"},
		{"/api/dlq?limit=0", "limit"},
		{"/api/audit?limit=0", "limit"},
		{"/api/jobs?status=bogus", "status"},
		{"/api/jobs?order=up", "order"},
		{"/api/dlq?reason=bogus", "reason"},
		{"/api/audit?action=bogus", "action"},
		{"/api/audit?before=-1", "before"},
		{"/api/jobs/1?events=maybe", "events"},
		{"/api/jobs/1?wait=soon", "wait"},
		{"/api/events?kind=a%20b", "kind"},
	} {
		a := s.get(tc.path)
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"`+tc.field+`"`) {
			t.Errorf("GET %s: %d %s; want 400 naming %s", tc.path, a.status, a.body, tc.field)
		}
	}
	for _, p := range []string{"/api/jobs?queue=default&kind=k&status=queued&tag=t&limit=10&order=asc", "/api/jobs/1?events=true&wait=1ms",
		"/api/dlq?queue=q&kind=k&tag=t&reason=max_attempts&limit=5&order=desc", "/api/audit?action=queue.pause&before=10&limit=5"} {
		if a := s.get(p); a.status != http.StatusOK {
			t.Errorf("GET %s: %d %s", p, a.status, a.body)
		}
	}
}

// Every action the audit trail records is one GET /api/audit?action=
// takes, so filtering by it is never refused.
func TestAuditActionFilterTakesEveryRecordedAction(t *testing.T) {
	s := newServer(t, ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: testToken}, {Name: "reader", Secret: testToken + "r", Role: ui.RoleRead}}}, false)
	auth := []string{"Authorization", "Bearer " + testToken}
	post := func(path, body string) {
		s.do("POST", path, "application/json", strings.NewReader(body), auth...)
	}
	post("/api/jobs", `{"queue":"q","kind":"k"}`)
	post("/api/jobs", `{"queue":"q","kind":"k"}`)
	post("/api/jobs", `{"queue":"q","kind":"k"}`)
	post("/api/jobs/1/cancel", ``)
	post("/api/dlq/move", `{"queue":"q"}`)
	post("/api/dlq/2/replay", `{}`)
	s.do("DELETE", "/api/dlq/3", "", nil, auth...)
	post("/api/dlq/replay", `{"queue":"q"}`)
	post("/api/dlq/purge", `{"queue":"q"}`)
	post("/api/queues/q/drain", `{}`)
	post("/api/queues/q/pause", ``)
	post("/api/queues/q/resume", ``)
	s.do("POST", "/api/queues/q/pause", "application/json", nil, "Authorization", "Bearer "+testToken+"r") // auth.denied
	a := s.do("GET", "/api/audit?limit=1000", "", nil, auth...)
	var out struct {
		Entries []struct {
			Action string `json:"action"`
		} `json:"entries"`
	}
	json.Unmarshal(a.body, &out)
	seen := map[string]bool{}
	for _, e := range out.Entries {
		seen[e.Action] = true
	}
	if len(seen) < 8 {
		t.Fatalf("only actions %v recorded: %s", seen, a.body)
	}
	for action := range seen {
		if a := s.do("GET", "/api/audit?action="+action, "", nil, auth...); a.status != 200 || !strings.Contains(string(a.body), `"action":"`+action+`"`) {
			t.Errorf("GET /api/audit?action=%s: %d %s", action, a.status, a.body)
		}
	}
}

// Messages say what is wrong with the field named, and who is asked what.
func TestMessagesNameTheProblem(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	for _, tc := range []struct{ path, body, field, want string }{
		{"/api/jobs", `{"kind":"k","priority":1.5}`, "priority", "want an integer, got number 1.5"},
		{"/api/queues/q/claim", `{"wait":"soon"}`, "wait", `want a duration like \"30s\"`},
		{"/api/jobs", `{"kind":"k","delay":true}`, "delay", "got bool"},
		{"/api/jobs/batch", `{"jobs":[{"kind":"k","delay":"later"}]}`, "jobs.delay", `got string \"later\"`},
	} {
		a := s.post(tc.path, tc.body)
		if a.status != 400 || !strings.Contains(string(a.body), `"field":"`+tc.field+`"`) || !strings.Contains(string(a.body), tc.want) {
			t.Errorf("POST %s %s: %d %s; want field %s and %q", tc.path, tc.body, a.status, a.body, tc.field, tc.want)
		}
	}
	// A wrong once-token is about the once-key and its token, not a job's lease.
	s.post("/api/once/charge-1", `{}`)
	a := s.post("/api/once/charge-1/done", `{"token":"not-the-token"}`)
	if a.status != 409 || a.code(t) != "once_held" || strings.Contains(string(a.body), "lease") || strings.Contains(string(a.body), "job") ||
		!strings.Contains(string(a.body), "token") {
		t.Errorf("once done with a wrong token: %d %s", a.status, a.body)
	}
	// 401: "needs a token" only when none was sent.
	tok := newServer(t, ui.Options{Tokens: []ui.Token{{Name: "ops", Secret: testToken}}, AuthFailLimit: -1}, false)
	if a := tok.get("/api/stats"); a.status != 401 || !strings.Contains(string(a.body), "needs a token") {
		t.Errorf("no token: %d %s", a.status, a.body)
	}
	if a := tok.do("GET", "/api/stats", "", nil, "Authorization", "Bearer wrong-token-0123456789"); a.status != 401 ||
		strings.Contains(string(a.body), "needs a token") || !strings.Contains(string(a.body), "not one this server accepts") {
		t.Errorf("wrong token: %d %s", a.status, a.body)
	}
}

// syncBuf is a log sink the server writes while the test reads it.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A client that hangs up during a long poll is logged at debug, not as a
// failed request at error level.
func TestClientHangUpIsDebug(t *testing.T) {
	var logs syncBuf
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	srv := httptest.NewServer(openapitest.Handler(t, ui.New(ui.Options{Service: svc, Log: zerolog.New(&logs).Level(zerolog.DebugLevel)})))
	defer srv.Close()
	res, err := svc.Submit(t.Context(), []app.SubmitInput{{Kind: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []func(ctx context.Context) *http.Request{
		func(ctx context.Context) *http.Request {
			r, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/jobs/%d?wait=10s", srv.URL, res[0].Job.ID), nil)
			return r
		},
		func(ctx context.Context) *http.Request {
			r, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/queues/empty/claim", strings.NewReader(`{"wait":"10s"}`))
			r.Header.Set("Content-Type", "application/json")
			return r
		},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		if resp, err := http.DefaultClient.Do(req(ctx)); err == nil {
			resp.Body.Close()
		}
		cancel()
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "client hung up") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if got := logs.String(); !strings.Contains(got, `"level":"debug"`) || strings.Contains(got, `"level":"error"`) {
		t.Fatalf("logs after two hang-ups:\n%s\nwant a debug line and no error", got)
	}
}

// The stylesheet's colours (embed/static/app.css), read as a person's
// eyes would meet them: every rule that sets a text colour, over the
// backgrounds it may sit on, in the light palette and the dark one, meets
// WCAG AA (4.5:1). axe-core checks the pages as rendered; this checks
// every class, the ones no fixture page shows too.

// cssRule is one rule of the stylesheet, with the at-rule it sits in.
type cssRule struct {
	media, selector string
	decls           map[string]string
}

var cssRuleRE = regexp.MustCompile(`(?s)([^{}]+)\{([^{}]*)\}`)

// parseCSS reads the rules of css (one level of @media nesting).
func parseCSS(css string) []cssRule {
	css = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(css, "")
	var out []cssRule
	media := ""
	depth := 0
	for i := 0; i < len(css); {
		if strings.HasPrefix(strings.TrimSpace(css[i:]), "@media") && depth == 0 {
			j := strings.Index(css[i:], "{")
			media = strings.TrimSpace(css[i : i+j])
			i += j + 1
			depth = 1
			continue
		}
		if depth == 1 && strings.HasPrefix(strings.TrimSpace(css[i:]), "}") {
			i += strings.Index(css[i:], "}") + 1
			depth, media = 0, ""
			continue
		}
		loc := cssRuleRE.FindStringSubmatchIndex(css[i:])
		if loc == nil {
			break
		}
		sel := strings.TrimSpace(css[i+loc[2] : i+loc[3]])
		decls := map[string]string{}
		for _, d := range strings.Split(css[i+loc[4]:i+loc[5]], ";") {
			if k, v, ok := strings.Cut(d, ":"); ok {
				decls[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
		out = append(out, cssRule{media: media, selector: sel, decls: decls})
		i += loc[1]
	}
	return out
}

type rgb struct{ r, g, b float64 }

func hexColor(s string) (rgb, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	var c [3]int
	if len(s) != 6 {
		return rgb{}, false
	}
	if _, err := fmt.Sscanf(s, "%02x%02x%02x", &c[0], &c[1], &c[2]); err != nil {
		return rgb{}, false
	}
	return rgb{float64(c[0]), float64(c[1]), float64(c[2])}, true
}

func (c rgb) luminance() float64 {
	lin := func(v float64) float64 {
		v /= 255
		if v <= 0.03928 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b)
}

func contrastRGB(a, b rgb) float64 {
	la, lb := a.luminance(), b.luminance()
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func mix(a rgb, p float64, b rgb) rgb {
	return rgb{a.r*p + b.r*(1-p), a.g*p + b.g*(1-p), a.b*p + b.b*(1-p)}
}

// palette is the custom properties (--x) of one theme.
type palette map[string]string

// resolve reads a colour value: #hex, a named var, white, or
// color-mix(in srgb, A N%, B) (transparent B is over the given base).
func (p palette) resolve(v string, base rgb) (rgb, bool) {
	v = strings.TrimSpace(v)
	for i := 0; i < 10 && strings.HasPrefix(v, "var("); i++ {
		name := strings.TrimSuffix(strings.TrimPrefix(v, "var("), ")")
		v = strings.TrimSpace(p[name])
	}
	switch {
	case v == "#fff" || v == "white":
		return rgb{255, 255, 255}, true
	case strings.HasPrefix(v, "#"):
		return hexColor(v)
	case strings.HasPrefix(v, "color-mix(in srgb,"):
		m := regexp.MustCompile(`^color-mix\(in srgb, (.+?) (\d+)%, (.+)\)$`).FindStringSubmatch(v)
		if m == nil {
			return rgb{}, false
		}
		a, ok := p.resolve(m[1], base)
		pct, _ := strconv.ParseFloat(m[2], 64)
		b := base
		if m[3] != "transparent" {
			b, ok = p.resolve(m[3], base)
		}
		return mix(a, pct/100, b), ok
	}
	return rgb{}, false
}

// palettes are the light palette and the dark one (the light one with
// the dark block's values over it), from the stylesheet.
func palettes(t *testing.T, rules []cssRule) (light, dark palette, darkOS, darkChosen map[string]string) {
	t.Helper()
	light, dark = palette{}, palette{}
	for _, r := range rules {
		vars := map[string]string{}
		for k, v := range r.decls {
			if strings.HasPrefix(k, "--") {
				vars[k] = v
			}
		}
		switch {
		case r.media == "" && r.selector == ":root":
			maps.Copy(light, vars)
		case r.media == "@media (prefers-color-scheme: dark)" && r.selector == `:root:not([data-theme="light"])`:
			darkOS = r.decls
		case r.media == "" && r.selector == `:root[data-theme="dark"]`:
			darkChosen = r.decls
		}
	}
	maps.Copy(dark, light)
	for k, v := range darkChosen {
		if strings.HasPrefix(k, "--") {
			dark[k] = v
		}
	}
	return light, dark, darkOS, darkChosen
}

func readCSS(t *testing.T) []cssRule {
	t.Helper()
	b, err := os.ReadFile("../embed/static/app.css")
	if err != nil {
		t.Fatal(err)
	}
	return parseCSS(string(b))
}

// The dark palette the OS asks for and the one the toggle chooses are the
// same, and a light choice wins over a dark OS; theme.js sets data-theme.
func TestDarkPalettesAgree(t *testing.T) {
	rules := readCSS(t)
	_, dark, darkOS, darkChosen := palettes(t, rules)
	if len(darkOS) < 20 || !reflect.DeepEqual(darkOS, darkChosen) {
		t.Fatalf("the dark palette under prefers-color-scheme (%d values) and under [data-theme=dark] (%d values) differ:\n%v\n%v", len(darkOS), len(darkChosen), darkOS, darkChosen)
	}
	if dark["--bg"] == "" || darkOS["color-scheme"] != "dark" {
		t.Errorf("the dark palette: --bg %q, color-scheme %q", dark["--bg"], darkOS["color-scheme"])
	}
	js, err := os.ReadFile("../embed/static/theme.js")
	if err != nil || !strings.Contains(string(js), `setAttribute("data-theme", t)`) || !strings.Contains(string(js), `"queue.theme"`) {
		t.Errorf("theme.js does not set data-theme from localStorage: %v", err)
	}
}

// Every text colour of the stylesheet meets WCAG AA (4.5:1) on what it
// sits on, in both palettes: a rule with a background over that background
// (a see-through one over the page, a panel and a hovered row); one
// without over those three; the top bar's over the top bar.
func TestStylesheetContrast(t *testing.T) {
	rules := readCSS(t)
	light, dark, _, _ := palettes(t, rules)
	topBar := regexp.MustCompile(`\.(top|nav|brand|actor|btn-nav|pref|logo)\b`)
	checked := 0
	for name, p := range map[string]palette{"light": light, "dark": dark} {
		bases := map[string]rgb{}
		for _, b := range []string{"--bg", "--surface", "--surface-2"} {
			c, ok := p.resolve("var("+b+")", rgb{})
			if !ok {
				t.Fatalf("%s: %s is not a colour", name, b)
			}
			bases[b] = c
		}
		top, _ := p.resolve("var(--top)", rgb{})
		for _, r := range rules {
			fgv, ok := r.decls["color"]
			if !ok || strings.Contains(r.selector, ":disabled") || strings.Contains(r.selector, "[disabled]") {
				continue
			}
			bgv := r.decls["background"]
			if bgv == "" {
				bgv = r.decls["background-color"]
			}
			on := bases
			if topBar.MatchString(r.selector) {
				on = map[string]rgb{"--top": top}
			}
			for bname, base := range on {
				bg := base
				if bgv != "" && bgv != "transparent" && bgv != "none" {
					c, ok := p.resolve(bgv, base)
					if !ok {
						continue // rgba() overlays of the top bar, gradients: axe-core checks those pages
					}
					bg = c
				}
				fg, ok := p.resolve(fgv, bg)
				if !ok {
					continue // inherit, currentColor
				}
				checked++
				if c := contrastRGB(fg, bg); c < 4.5 {
					t.Errorf("%s palette: %s { color: %s } on %s (over %s) has contrast %.2f:1, want at least 4.5:1", name, r.selector, fgv, bgv, bname, c)
				}
			}
		}
	}
	if checked < 150 {
		t.Fatalf("only %d colour pairs checked: is the stylesheet parsed?", checked)
	}
}
