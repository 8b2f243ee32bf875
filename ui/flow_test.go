package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/openapitest"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/sqlite"
	"github.com/queuehq/queue/ui"
)

// Flow control by key over HTTP: the key and dedupe rules of a submission,
// the duplicate answer, claims over several queues, the key filter, a
// queue's keys, and the jobs waiting on a key limit in /metrics.

// flowConfig limits the keys of queue "tenants" (one job of a key at a time)
// and hands out the keys of "fair" in turn.
func flowConfig() *app.Config {
	cfg := app.DefaultConfig()
	cfg.Queues["tenants"] = app.QueueConfig{KeyConcurrency: 1, KeyRate: app.KeyRate{N: 10, Per: time.Minute}}
	cfg.Queues["fair"] = app.QueueConfig{Fairness: app.FairnessRoundRobin}
	return cfg
}

// newFlowService is a Service over a store (SQLite when withSQLite) that
// knows the key limits of flowConfig.
func newFlowService(t testing.TB, withSQLite bool) (*app.Service, *app.FakeClock) {
	t.Helper()
	cfg := flowConfig()
	bus := app.NewBus()
	clock := app.NewFakeClock(time.Now().UTC().Truncate(time.Millisecond))
	sopts := app.StoreOptions{Clock: clock, Bus: bus, KeyLimits: cfg.KeyLimits}
	var store app.Store = memory.New(sopts)
	if withSQLite {
		s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "q.db"), sqlite.Options{StoreOptions: sopts, Sync: "normal"})
		if err != nil {
			t.Fatal(err)
		}
		store = s
	}
	t.Cleanup(func() { store.Close() })
	return app.NewService(store, cfg, clock, bus, zerolog.Nop()), clock
}

// newFlowServer serves the API (and /metrics) over newFlowService.
func newFlowServer(t *testing.T, opts ui.Options, withSQLite bool) (*server, *ui.Metrics) {
	t.Helper()
	svc, clock := newFlowService(t, withSQLite)
	m := ui.NewMetrics(svc)
	opts.Service, opts.Metrics = svc, m.Handler()
	opts.Log = zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	srv := httptest.NewServer(openapitest.Handler(t, ui.New(opts)))
	t.Cleanup(srv.Close)
	return &server{t: t, url: srv.URL, svc: svc, clock: clock}, m
}

// onBothFlowStores runs test over the memory store and over SQLite.
func onBothFlowStores(t *testing.T, test func(*testing.T, *server)) {
	for _, store := range []string{"memory", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			s, _ := newFlowServer(t, ui.Options{}, store == "sqlite")
			test(t, s)
		})
	}
}

// wantDuplicate checks a submission answered 200 with job id marked
// duplicate, and returns the job.
func wantDuplicate(t *testing.T, what string, a answer, id int64) map[string]any {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("%s: %d %s, want 200 with the job stored before", what, a.status, a.body)
	}
	j := a.json(t)
	if j["duplicate"] != true || num(j, "id") != id {
		t.Fatalf("%s: id %v duplicate %v, want job %d with \"duplicate\": true: %s", what, j["id"], j["duplicate"], id, a.body)
	}
	if a.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("%s: a duplicate is not an idempotent replay, yet Idempotent-Replayed is set", what)
	}
	return j
}

// wantNew checks a submission answered 201 with a new job, not marked.
func wantNew(t *testing.T, what string, a answer) map[string]any {
	t.Helper()
	if a.status != http.StatusCreated {
		t.Fatalf("%s: %d %s, want 201", what, a.status, a.body)
	}
	j := a.json(t)
	if _, ok := j["duplicate"]; ok {
		t.Fatalf("%s: a new job carries \"duplicate\": %s", what, a.body)
	}
	return j
}

func TestSubmitDuplicates(t *testing.T) { onBothFlowStores(t, testSubmitDuplicates) }

func testSubmitDuplicates(t *testing.T, s *server) {
	// unique: the same key while the first is queued answers with it.
	first := wantNew(t, "unique, first", s.post("/api/jobs", `{"queue":"q","kind":"sync","key":"acme","unique":{"by":["key"]}}`))
	if first["key"] != "acme" {
		t.Fatalf("the job's key: %v, want acme", first["key"])
	}
	wantDuplicate(t, "unique, again", s.post("/api/jobs", `{"queue":"q","kind":"sync","key":"acme","unique":{"by":["key"]}}`), num(first, "id"))
	wantNew(t, "unique, another key", s.post("/api/jobs", `{"queue":"q","kind":"sync","key":"globex","unique":{"by":["key"]}}`))

	// throttle: the first of the period is kept, the rest answer with it.
	kept := wantNew(t, "throttle, first", s.post("/api/jobs", `{"queue":"q","kind":"mail","key":"k1","throttle":"1m","payload":{"n":1}}`))
	j := wantDuplicate(t, "throttle, second", s.post("/api/jobs", `{"queue":"q","kind":"mail","key":"k1","throttle":"1m","payload":{"n":2}}`), num(kept, "id"))
	if p, _ := json.Marshal(j["payload"]); string(p) != `{"n":1}` {
		t.Fatalf("throttled: payload %s, want the kept job's {\"n\":1}", p)
	}

	// debounce: the last write wins on the queued job, its run_at pushed.
	d := wantNew(t, "debounce, first", s.post("/api/jobs", `{"queue":"q","kind":"hook","key":"doc-7","debounce":"30s","payload":{"v":1}}`))
	s.clock.Advance(10 * time.Second)
	j = wantDuplicate(t, "debounce, second", s.post("/api/jobs", `{"queue":"q","kind":"hook","key":"doc-7","debounce":"30s","payload":{"v":2}}`), num(d, "id"))
	if p, _ := json.Marshal(j["payload"]); string(p) != `{"v":2}` {
		t.Fatalf("debounced: payload %s, want the last {\"v\":2}", p)
	}
	if j["run_at"] == d["run_at"] {
		t.Fatalf("debounced: run_at stayed %v; the second submission pushes it", j["run_at"])
	}
	evs := string(s.get(fmt.Sprintf("/api/jobs/%d/events", num(d, "id"))).body)
	if !strings.Contains(evs, `"job.debounced"`) {
		t.Fatalf("the debounced job's events lack job.debounced: %s", evs)
	}

	// A batch marks each duplicate; its new jobs are not marked.
	a := s.post("/api/jobs/batch", `{"jobs":[{"queue":"q","kind":"sync","key":"acme","unique":{"by":["key"]}},{"queue":"q","kind":"plain"}]}`)
	if a.status != http.StatusCreated {
		t.Fatalf("batch: %d %s", a.status, a.body)
	}
	jobs := a.json(t)["jobs"].([]any)
	dup, fresh := jobs[0].(map[string]any), jobs[1].(map[string]any)
	if dup["duplicate"] != true || num(dup, "id") != num(first, "id") {
		t.Fatalf("batch: jobs[0] = %v, want job %d marked duplicate", dup, num(first, "id"))
	}
	if _, ok := fresh["duplicate"]; ok || num(fresh, "id") == 0 {
		t.Fatalf("batch: jobs[1] = %v, want a new job without \"duplicate\"", fresh)
	}

	// An idempotent replay keeps its answer: 200, the header, no "duplicate".
	r1 := s.post("/api/jobs", `{"queue":"q","kind":"k"}`, "Idempotency-Key", "order-1")
	r2 := s.post("/api/jobs", `{"queue":"q","kind":"k"}`, "Idempotency-Key", "order-1")
	if r1.status != http.StatusCreated || r2.status != http.StatusOK || r2.header.Get("Idempotent-Replayed") != "true" ||
		strings.Contains(string(r2.body), "duplicate") {
		t.Fatalf("idempotent replay: %d then %d %q %s", r1.status, r2.status, r2.header.Get("Idempotent-Replayed"), r2.body)
	}
}

// Bad rules are 400 invalid_field naming the field, and store nothing.
func TestSubmitFlowRulesBadInput(t *testing.T) {
	s, _ := newFlowServer(t, ui.Options{}, false)
	long := strings.Repeat("k", app.MaxKeyLength+1)
	for _, tc := range []struct{ path, body, field string }{
		{"/api/jobs", `{"kind":"k","debounce":"30s"}`, "debounce"},
		{"/api/jobs", `{"kind":"k","throttle":"1m"}`, "throttle"},
		{"/api/jobs", `{"kind":"k","key":"a","unique":{},"debounce":"30s"}`, "unique"},
		{"/api/jobs", `{"kind":"k","key":"a","throttle":"1m","debounce":"30s"}`, "unique"},
		{"/api/jobs", `{"kind":"k","unique":{"by":["colour"]}}`, "unique.by"},
		{"/api/jobs", `{"kind":"k","unique":{"by":["key"]}}`, "unique.by"},
		{"/api/jobs", `{"kind":"k","unique":{"while":["running"]}}`, "unique.while"},
		{"/api/jobs", `{"kind":"k","unique":{"for":"soon"}}`, "unique.for"},
		{"/api/jobs", `{"kind":"k","unique":{"by":"key"}}`, "unique.by"},
		{"/api/jobs", `{"kind":"k","unique":{"bye":["key"]}}`, "bye"},
		{"/api/jobs", `{"kind":"k","key":"a","debounce":"0s"}`, "debounce"},
		{"/api/jobs", `{"kind":"k","key":"a","debounce":"30s","delay":"1m"}`, "debounce"},
		{"/api/jobs", `{"kind":"k","key":"` + long + `"}`, "key"},
		{"/api/jobs", `{"kind":"k","key":7}`, "key"},
		{"/api/jobs/batch", `{"jobs":[{"kind":"k"},{"kind":"k","debounce":"30s"}]}`, "jobs[1].debounce"},
		{"/api/jobs/batch", `{"jobs":[{"kind":"k","key":"a","unique":{"by":["size"]}},{"kind":"k"}]}`, "jobs[0].unique.by"},
	} {
		a := s.post(tc.path, tc.body)
		if a.status != http.StatusBadRequest || a.code(t) != "invalid_field" || !strings.Contains(string(a.body), `"field":"`+tc.field+`"`) {
			t.Errorf("POST %s %.120s: %d %s; want 400 invalid_field naming %s", tc.path, tc.body, a.status, a.body, tc.field)
		}
	}
	if n, _ := s.svc.Store.CountJobs(t.Context(), app.JobFilter{}); n != 0 {
		t.Fatalf("refused submissions stored %d jobs", n)
	}
}

func TestClaimQueues(t *testing.T) { onBothFlowStores(t, testClaimQueues) }

func testClaimQueues(t *testing.T, s *server) {
	// Strict order: the first queue is emptied before the next is asked.
	for range 2 {
		s.submit(`{"queue":"s1","kind":"k"}`)
	}
	for range 5 {
		s.submit(`{"queue":"s2","kind":"k"}`)
	}
	a := s.post("/api/claim", `{"queues":["s1","s2"],"limit":3,"worker_id":"w1","timeout":"1m"}`)
	if a.status != http.StatusOK {
		t.Fatalf("strict claim: %d %s", a.status, a.body)
	}
	var got []string
	for _, j := range a.json(t)["jobs"].([]any) {
		jm := j.(map[string]any)
		if num(jm, "lease") == 0 || jm["lease_expires_at"] == nil || jm["worker_id"] != "w1" || jm["status"] != "processing" {
			t.Fatalf("strict claim: a job without its lease, worker or status: %v", jm)
		}
		got = append(got, jm["queue"].(string))
	}
	if strings.Join(got, ",") != "s1,s1,s2" {
		t.Fatalf("strict claim [s1, s2] of 3: queues %v, want s1,s1,s2", got)
	}

	// Weighted: over many claims of one job, the queues get work in about
	// the ratio of their weights (6:3:1 of 200 claims: 120, 60, 20).
	var batch []string
	for _, q := range []string{"critical", "default", "low"} {
		for range 200 {
			batch = append(batch, `{"queue":"`+q+`","kind":"k"}`)
		}
	}
	if a := s.post("/api/jobs/batch", `{"jobs":[`+strings.Join(batch, ",")+`]}`); a.status != http.StatusCreated {
		t.Fatalf("batch: %d %.300s", a.status, a.body)
	}
	count := map[string]int{}
	for range 200 {
		a := s.post("/api/claim", `{"queues":{"critical":6,"default":3,"low":1}}`)
		jobs := a.json(t)["jobs"].([]any)
		if a.status != http.StatusOK || len(jobs) != 1 {
			t.Fatalf("weighted claim: %d %s", a.status, a.body)
		}
		count[jobs[0].(map[string]any)["queue"].(string)]++
	}
	// Each bound is more than five standard deviations from its mean.
	if c, d, l := count["critical"], count["default"], count["low"]; c < 85 || c > 155 || d < 25 || d > 95 || l < 3 || l > 45 {
		t.Fatalf("weighted claims 6:3:1 of 200: critical %d, default %d, low %d; want about 120, 60, 20", c, d, l)
	}
	// A claim of several jobs draws from more than one queue.
	a = s.post("/api/claim", `{"queues":{"critical":1,"default":1},"limit":10}`)
	if jobs := a.json(t)["jobs"].([]any); a.status != http.StatusOK || len(jobs) != 10 {
		t.Fatalf("weighted claim of 10: %d %s", a.status, a.body)
	}

	// Nothing to hand out: 200 with an empty list; a long poll wakes on a
	// job landing in any of its queues.
	a = s.post("/api/claim", `{"queues":["empty-a","empty-b"]}`)
	if a.status != http.StatusOK || string(a.body) != "{\"jobs\":[]}\n" {
		t.Fatalf("claim of empty queues: %d %s, want 200 {\"jobs\":[]}", a.status, a.body)
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() { done <- s.post("/api/claim", `{"queues":{"empty-a":1,"empty-b":1},"wait":"10s"}`) }()
	time.Sleep(200 * time.Millisecond)
	id := num(s.submit(`{"queue":"empty-b","kind":"late"}`), "id")
	a = <-done
	jobs := a.json(t)["jobs"].([]any)
	if a.status != http.StatusOK || len(jobs) != 1 || num(jobs[0].(map[string]any), "id") != id {
		t.Fatalf("long poll over two queues: %d %s, want job %d", a.status, a.body, id)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("long poll over two queues answered after %v: the submission did not wake it", took)
	}

	// Bad claims: 400 invalid_field naming the field.
	over := make([]string, app.MaxClaimQueues+1)
	for i := range over {
		over[i] = fmt.Sprintf(`"q%d"`, i)
	}
	for _, tc := range []struct{ path, body, field string }{
		{"/api/claim", `{}`, "queues"},
		{"/api/claim", `{"queues":null}`, "queues"},
		{"/api/claim", `{"queues":{}}`, "queues"},
		{"/api/claim", `{"queues":[]}`, "queues"},
		{"/api/claim", `{"queues":"critical"}`, "queues"},
		{"/api/claim", `{"queues":{"critical":0}}`, "queues"},
		{"/api/claim", `{"queues":{"critical":-2}}`, "queues"},
		{"/api/claim", `{"queues":{"critical":1001}}`, "queues"},
		{"/api/claim", `{"queues":{"critical":1.5}}`, "queues"},
		{"/api/claim", `{"queues":{"critical":"high"}}`, "queues"},
		{"/api/claim", `{"queues":{"critical":6,"critical":3}}`, "queues"},
		{"/api/claim", `{"queues":["critical","critical"]}`, "queues"},
		{"/api/claim", `{"queues":["no/such"]}`, "queues"},
		{"/api/claim", `{"queues":["` + strings.Repeat("q", 65) + `"]}`, "queues"},
		{"/api/claim", `{"queues":[` + strings.Join(over, ",") + `]}`, "queues"},
		{"/api/claim", `{"queues":["a"],"limit":1001}`, "limit"},
		{"/api/claim", `{"queues":["a"],"wait":"2m"}`, "wait"},
		{"/api/claim", `{"queues":["a"],"timeout":"0s"}`, "timeout"},
		{"/api/claim", `{"queues":["a"],"queue":"a"}`, "queue"},
		{"/api/queues/a/claim", `{"queues":["a","b"]}`, "queues"},
	} {
		a := s.post(tc.path, tc.body)
		if a.status != http.StatusBadRequest || a.code(t) != "invalid_field" || !strings.Contains(string(a.body), `"field":"`+tc.field+`"`) {
			t.Errorf("POST %s %.100s: %d %s; want 400 invalid_field naming %s", tc.path, tc.body, a.status, a.body, tc.field)
		}
	}
	if a := s.post("/api/claim", ``); a.status != http.StatusBadRequest || a.code(t) != "invalid_json" {
		t.Errorf("POST /api/claim without a body: %d %s, want 400 invalid_json", a.status, a.body)
	}
}

// POST /api/claim needs the work role, and a token with a queue list
// must hold every queue the claim names.
func TestClaimQueuesTokens(t *testing.T) {
	tokens := []ui.Token{
		{Name: "producer", Secret: "submit-token-0123456789", Role: ui.RoleSubmit},
		{Name: "worker-a", Secret: "work-token-a-0123456789", Role: ui.RoleWork, Queues: []string{"a", "c"}},
		{Name: "boss", Secret: "admin-token-0123456789"},
	}
	s, _ := newFlowServer(t, ui.Options{Tokens: tokens}, false)
	as := func(tok ui.Token) []string { return []string{"Authorization", "Bearer " + tok.Secret} }
	for _, q := range []string{"a", "b", "c"} {
		if a := s.post("/api/jobs", `{"queue":"`+q+`","kind":"k"}`, as(tokens[2])...); a.status != http.StatusCreated {
			t.Fatalf("submit to %s: %d %s", q, a.status, a.body)
		}
	}
	for _, tc := range []struct {
		who    ui.Token
		body   string
		status int
	}{
		{tokens[0], `{"queues":["a"]}`, http.StatusForbidden},            // submit may not claim
		{tokens[1], `{"queues":["a","b"]}`, http.StatusForbidden},        // b is not its queue
		{tokens[1], `{"queues":{"c":1,"b":5}}`, http.StatusForbidden},    // nor by weight
		{tokens[1], `{"queues":{"a":2,"c":1},"limit":5}`, http.StatusOK}, // both are
		{tokens[2], `{"queues":["b"]}`, http.StatusOK},
	} {
		a := s.post("/api/claim", tc.body, as(tc.who)...)
		if a.status != tc.status {
			t.Errorf("%s claims %s: %d %s, want %d", tc.who.Name, tc.body, a.status, a.body, tc.status)
		}
		if a.status == http.StatusForbidden && a.code(t) != "forbidden" {
			t.Errorf("%s claims %s: code %s, want forbidden", tc.who.Name, tc.body, a.code(t))
		}
	}
	n, _ := s.svc.Store.CountJobs(t.Context(), app.JobFilter{StatusIn: []app.Status{app.StatusProcessing}})
	if n != 3 {
		t.Fatalf("after the claims: %d jobs processing, want 3 (a and c by worker-a, b by boss)", n)
	}
}

func TestListByKey(t *testing.T) { onBothFlowStores(t, testListByKey) }

func testListByKey(t *testing.T, s *server) {
	want := map[int64]bool{}
	for i, key := range []string{"acme", "globex", "acme", "", "acme"} {
		q := "q"
		if i == 4 {
			q = "other"
		}
		j := s.submit(fmt.Sprintf(`{"queue":%q,"kind":"k","key":%q}`, q, key))
		if key == "acme" {
			want[num(j, "id")] = true
		}
	}
	ids := func(path string) map[int64]bool {
		t.Helper()
		a := s.get(path)
		if a.status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, a.status, a.body)
		}
		got := map[int64]bool{}
		for _, j := range a.json(t)["jobs"].([]any) {
			jm := j.(map[string]any)
			if jm["key"] != "acme" {
				t.Fatalf("GET %s: a job of key %v", path, jm["key"])
			}
			got[num(jm, "id")] = true
		}
		return got
	}
	if got := ids("/api/jobs?key=acme"); len(got) != 3 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("GET /api/jobs?key=acme: %v, want %v", got, want)
	}
	if got := ids("/api/jobs?key=acme&queue=q&status=queued"); len(got) != 2 {
		t.Fatalf("GET /api/jobs?key=acme&queue=q: %d jobs, want 2", len(got))
	}
	if got := ids("/api/jobs?key=initech"); len(got) != 0 {
		t.Fatalf("GET /api/jobs?key=initech: %v, want none", got)
	}
	for _, p := range []string{"/api/jobs?key=" + strings.Repeat("k", app.MaxKeyLength+1), "/api/jobs?key=acme&status=dead_letter", "/api/jobs?key=a&key=b"} {
		if a := s.get(p); a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"key"`) {
			t.Errorf("GET %.60s: %d %s, want 400 naming key", p, a.status, a.body)
		}
	}
}

func TestQueueKeys(t *testing.T) { onBothFlowStores(t, testQueueKeys) }

// keyedJobs submits to "tenants" (one job of a key at a time): 3 of acme,
// 2 of globex, 1 of initech, and one without a key; acme and globex then
// hold 3 jobs back between them.
func keyedJobs(t testing.TB, svc *app.Service, hostile string) {
	t.Helper()
	var ins []app.SubmitInput
	for _, k := range []string{"acme", "acme", "acme", "globex", "globex", "initech", "", hostile, hostile} {
		ins = append(ins, app.SubmitInput{Queue: "tenants", Kind: "sync", Key: k})
	}
	mustSubmit(t, svc, ins...)
}

func testQueueKeys(t *testing.T, s *server) {
	keyedJobs(t, s.svc, "umbrella")
	var st struct {
		Queue  string `json:"queue"`
		Limits struct {
			KeyConcurrency int    `json:"key_concurrency"`
			KeyRate        string `json:"key_rate"`
			Fairness       string `json:"fairness"`
		} `json:"limits"`
		Held    int            `json:"held"`
		Busiest []app.KeyCount `json:"busiest"`
		AtLimit []app.KeyCount `json:"at_limit"`
	}
	a := s.get("/api/queues/tenants/keys")
	if a.status != http.StatusOK {
		t.Fatalf("keys: %d %s", a.status, a.body)
	}
	if err := json.Unmarshal(a.body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Queue != "tenants" || st.Limits.KeyConcurrency != 1 || st.Limits.KeyRate != "10/1m" || st.Limits.Fairness != "" {
		t.Fatalf("keys of tenants: queue %q limits %+v", st.Queue, st.Limits)
	}
	if st.Held != 4 || len(st.AtLimit) != 3 || st.AtLimit[0] != (app.KeyCount{Key: "acme", Queued: 3, Held: 2}) {
		t.Fatalf("keys of tenants: held %d, at limit %+v; want 4 held, acme first with 2", st.Held, st.AtLimit)
	}
	if len(st.Busiest) != 4 || st.Busiest[0].Key != "acme" || st.Busiest[0].Queued != 3 {
		t.Fatalf("keys of tenants: busiest %+v, want 4 keys, acme first with 3 queued", st.Busiest)
	}
	// A claim takes a job of each key with room; the rest stay held.
	jobs := mustClaim(t, s.svc, "tenants", 100)
	if len(jobs) != 5 {
		t.Fatalf("claim of tenants: %d jobs, want 5 (one per key, and the one without)", len(jobs))
	}
	json.Unmarshal(s.get("/api/queues/tenants/keys?limit=1").body, &st)
	if st.Held != 4 || len(st.AtLimit) != 1 || len(st.Busiest) != 1 || st.Busiest[0] != (app.KeyCount{Key: "acme", Queued: 2, Processing: 1, Held: 2}) {
		t.Fatalf("keys of tenants after a claim, limit 1: held %d, at limit %+v, busiest %+v", st.Held, st.AtLimit, st.Busiest)
	}
	// A queue without keyed jobs: zeros and empty lists, never null.
	if a := s.get("/api/queues/plain/keys"); a.status != http.StatusOK ||
		string(a.body) != `{"queue":"plain","limits":{"key_concurrency":0,"key_rate":"","fairness":""},"held":0,"busiest":[],"at_limit":[]}`+"\n" {
		t.Fatalf("keys of a queue without keys: %d %s", a.status, a.body)
	}
	for _, tc := range []struct{ path, field string }{
		{"/api/queues/tenants/keys?limit=0", "limit"},
		{"/api/queues/tenants/keys?limit=101", "limit"},
		{"/api/queues/tenants/keys?limit=-1", "limit"},
		{"/api/queues/tenants/keys?limit=ten", "limit"},
		{"/api/queues/tenants/keys?cursor=x", "cursor"},
		{"/api/queues/bad%20name/keys", "queue"},
	} {
		if a := s.get(tc.path); a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"`+tc.field+`"`) {
			t.Errorf("GET %s: %d %s, want 400 naming %s", tc.path, a.status, a.body, tc.field)
		}
	}
	if a := s.get("/api/queues/tenants/keys?limit=100"); a.status != http.StatusOK {
		t.Errorf("GET keys?limit=100: %d %s", a.status, a.body)
	}
}

// A token with a queue list reads the keys of its queues only.
func TestQueueKeysTokens(t *testing.T) {
	tokens := []ui.Token{{Name: "viewer-a", Secret: "read-token-a-0123456789", Role: ui.RoleRead, Queues: []string{"tenants"}}}
	s, _ := newFlowServer(t, ui.Options{Tokens: tokens}, false)
	auth := []string{"Authorization", "Bearer " + tokens[0].Secret}
	if a := s.do("GET", "/api/queues/tenants/keys", "", nil, auth...); a.status != http.StatusOK {
		t.Fatalf("keys of its queue: %d %s", a.status, a.body)
	}
	if a := s.do("GET", "/api/queues/fair/keys", "", nil, auth...); a.status != http.StatusForbidden {
		t.Fatalf("keys of another queue: %d %s, want 403", a.status, a.body)
	}
}

// /metrics counts the jobs waiting on a key limit per queue, 0 for a
// queue holding none back.
func TestMetricsJobsWaitingOnKey(t *testing.T) {
	s, m := newFlowServer(t, ui.Options{}, false)
	keyedJobs(t, s.svc, "umbrella")
	s.submit(`{"queue":"plain","kind":"k","key":"acme"}`)
	fams := scrape(t, m)
	for q, want := range map[string]float64{"tenants": 4, "plain": 0} {
		if v, ok := sample(fams, "queue_jobs_waiting_on_key", map[string]string{"queue": q}); !ok || v != want {
			t.Errorf("queue_jobs_waiting_on_key{queue=%q} = %v (present %v), want %v", q, v, ok, want)
		}
	}
	// Served at /metrics with the other gauges.
	if a := s.get("/metrics"); a.status != http.StatusOK || !strings.Contains(string(a.body), `queue_jobs_waiting_on_key{queue="tenants"} 4`) {
		t.Fatalf("/metrics: %d, lacks queue_jobs_waiting_on_key{queue=\"tenants\"} 4", a.status)
	}
	// A job that ends lets the next of its key go: one fewer waits.
	for _, j := range mustClaim(t, s.svc, "tenants", 100) {
		if j.Key == "acme" {
			if err := s.svc.Complete(t.Context(), j.ID, j.Lease, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if v, _ := sample(scrape(t, m), "queue_jobs_waiting_on_key", map[string]string{"queue": "tenants"}); v != 3 {
		t.Fatalf("after acme's job is done: queue_jobs_waiting_on_key{queue=\"tenants\"} = %v, want 3", v)
	}
}

// nilKeyStore is a store whose KeyStats leaves its lists nil.
type nilKeyStore struct{ app.Store }

func (nilKeyStore) KeyStats(context.Context, string, int) (*app.KeyStats, error) {
	return &app.KeyStats{}, nil
}

// The keys of a queue answer empty lists, never null, whatever the store gives.
func TestQueueKeysNeverNull(t *testing.T) {
	svc, _ := newFlowService(t, false)
	s := newServer(t, ui.Options{Service: app.NewService(nilKeyStore{svc.Store}, svc.Config, svc.Clock, svc.Bus, zerolog.Nop())}, false)
	if a := s.get("/api/queues/tenants/keys"); a.status != http.StatusOK || !strings.Contains(string(a.body), `"held":0,"busiest":[],"at_limit":[]}`) {
		t.Fatalf("keys over a store answering nil lists: %d %s", a.status, a.body)
	}
}
