package ui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/ui"
)

// onBothStores runs test on a server over the memory store and one over SQLite.
func onBothStores(t *testing.T, test func(*testing.T, *server)) {
	for _, store := range []string{"memory", "sqlite"} {
		t.Run(store, func(t *testing.T) { test(t, newServer(t, ui.Options{}, store == "sqlite")) })
	}
}

// diamond is A; B and C after A; D after B and C, all in queue etl.
const diamond = `{"name":"etl","tags":["nightly"],"steps":[
	{"step":"A","queue":"etl","kind":"download","payload":{"url":"https://example.com/data.csv"}},
	{"step":"B","queue":"etl","kind":"transform","depends_on":["A"]},
	{"step":"C","queue":"etl","kind":"transform","depends_on":["A"]},
	{"step":"D","queue":"etl","kind":"load","depends_on":["B","C"]}]}`

// workflowView is GET /api/workflows/{id} as a test reads it.
type workflowView struct {
	ID           int64    `json:"id"`
	Name         string   `json:"name"`
	Status       string   `json:"status"`
	StepCount    int      `json:"step_count"`
	DoneCount    int      `json:"done_count"`
	FailedCount  int      `json:"failed_count"`
	CriticalPath []string `json:"critical_path"`
	Steps        []struct {
		Step      string `json:"step"`
		Status    string `json:"status"`
		JobID     int64  `json:"job_id"`
		WaitingOn int    `json:"waiting_on"`
		Error     string `json:"error"`
	} `json:"steps"`
}

func (v workflowView) step(t *testing.T, name string) (status string, jobID int64) {
	t.Helper()
	for _, s := range v.Steps {
		if s.Step == name {
			return s.Status, s.JobID
		}
	}
	t.Fatalf("workflow %d has no step %q: %+v", v.ID, name, v.Steps)
	return "", 0
}

func (s *server) workflow(id int64) workflowView {
	s.t.Helper()
	a := s.get(fmt.Sprintf("/api/workflows/%d", id))
	if a.status != http.StatusOK {
		s.t.Fatalf("GET workflow %d: %d %s", id, a.status, a.body)
	}
	var v workflowView
	if err := json.Unmarshal(a.body, &v); err != nil {
		s.t.Fatalf("workflow %d: %v: %s", id, err, a.body)
	}
	return v
}

func (s *server) submitWorkflow(body string) workflowView {
	s.t.Helper()
	a := s.post("/api/workflows", body)
	if a.status != http.StatusCreated {
		s.t.Fatalf("POST /api/workflows: %d %s", a.status, a.body)
	}
	var v workflowView
	if err := json.Unmarshal(a.body, &v); err != nil {
		s.t.Fatalf("POST /api/workflows: %v: %s", err, a.body)
	}
	return v
}

// claimed is one job of a claim answer, with its parents.
type claimed struct {
	ID         int64  `json:"id"`
	Lease      int64  `json:"lease"`
	Step       string `json:"step"`
	WorkflowID int64  `json:"workflow_id"`
	Parents    []struct {
		Step   string          `json:"step"`
		Status string          `json:"status"`
		JobID  int64           `json:"job_id"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	} `json:"parents"`
}

// claimStep claims one job of queue and returns it; none is a failure.
func (s *server) claimStep(queue string) claimed {
	s.t.Helper()
	a := s.post("/api/queues/"+queue+"/claim", `{"worker_id":"t","limit":1}`)
	var out struct {
		Jobs []claimed `json:"jobs"`
	}
	if err := json.Unmarshal(a.body, &out); a.status != http.StatusOK || err != nil || len(out.Jobs) != 1 {
		s.t.Fatalf("claim %s: %d %s, want one job", queue, a.status, a.body)
	}
	return out.Jobs[0]
}

func (s *server) noClaim(queue string) {
	s.t.Helper()
	a := s.post("/api/queues/"+queue+"/claim", `{"worker_id":"t","limit":10}`)
	if a.status != http.StatusOK || !strings.Contains(string(a.body), `"jobs":[]`) {
		s.t.Fatalf("claim %s: %d %s, want no job", queue, a.status, a.body)
	}
}

func (s *server) completeJob(j claimed, result string) {
	s.t.Helper()
	if a := s.post(fmt.Sprintf("/api/jobs/%d/complete", j.ID), fmt.Sprintf(`{"lease":%d,"result":%s}`, j.Lease, result)); a.status != http.StatusOK {
		s.t.Fatalf("complete %d (step %s): %d %s", j.ID, j.Step, a.status, a.body)
	}
}

// Done when 1: one request submits the diamond; D's claim carries the
// results of B and C; the workflow ends done.
func TestWorkflowDiamondOverHTTP(t *testing.T) { onBothStores(t, testWorkflowDiamondOverHTTP) }

func testWorkflowDiamondOverHTTP(t *testing.T, s *server) {
	v := s.submitWorkflow(diamond)
	if v.ID <= 0 || v.Name != "etl" || v.Status != "running" || v.StepCount != 4 || len(v.Steps) != 4 {
		t.Fatalf("submitted: %+v", v)
	}
	if st, jid := v.step(t, "A"); st != "queued" || jid == 0 {
		t.Fatalf("A at submission: %s job %d, want queued with a job", st, jid)
	}
	for _, n := range []string{"B", "C", "D"} {
		if st, jid := v.step(t, n); st != "waiting" || jid != 0 {
			t.Fatalf("%s at submission: %s job %d, want waiting without a job", n, st, jid)
		}
	}
	if got := s.get("/api/jobs?queue=etl").json(t)["jobs"].([]any); len(got) != 1 {
		t.Fatalf("jobs after submission: %d, want only A's (waiting steps are not jobs)", len(got))
	}

	a := s.claimStep("etl")
	if a.Step != "A" || a.WorkflowID != v.ID || len(a.Parents) != 0 {
		t.Fatalf("first claim: %+v, want step A of workflow %d without parents", a, v.ID)
	}
	s.noClaim("etl") // B and C wait for A
	s.completeJob(a, `{"rows":100}`)
	results := map[string]string{"B": `{"b":1}`, "C": `{"c":2}`}
	for range 2 {
		j := s.claimStep("etl")
		if len(j.Parents) != 1 || j.Parents[0].Step != "A" || j.Parents[0].Status != "done" || string(j.Parents[0].Result) != `{"rows":100}` || j.Parents[0].JobID != a.ID {
			t.Fatalf("claim of %s: parents %+v, want A done with its result", j.Step, j.Parents)
		}
		s.completeJob(j, results[j.Step])
	}
	d := s.claimStep("etl")
	if d.Step != "D" || len(d.Parents) != 2 {
		t.Fatalf("claim after B and C: %+v, want D with two parents", d)
	}
	for _, p := range d.Parents {
		if p.Status != "done" || string(p.Result) != results[p.Step] || p.JobID == 0 {
			t.Fatalf("D's parent %s: %+v, want done with result %s", p.Step, p, results[p.Step])
		}
	}
	if mid := s.workflow(v.ID); mid.Status != "running" || mid.DoneCount != 3 {
		t.Fatalf("while D runs: %+v", mid)
	}
	if st, _ := s.workflow(v.ID).step(t, "D"); st != "processing" {
		t.Fatalf("D while claimed: %s, want processing (its job's status)", st)
	}
	s.completeJob(d, `"loaded"`)
	end := s.workflow(v.ID)
	if end.Status != "done" || end.DoneCount != 4 || end.FailedCount != 0 {
		t.Fatalf("at the end: %+v", end)
	}
	if p := strings.Join(end.CriticalPath, ","); p != "A,B,D" && p != "A,C,D" {
		t.Fatalf("critical path %v, want A, B or C, D", end.CriticalPath)
	}
	list := s.get("/api/workflows?status=done").json(t)["workflows"].([]any)
	if len(list) != 1 || num(list[0].(map[string]any), "id") != v.ID {
		t.Fatalf("GET /api/workflows?status=done: %v", list)
	}
	if a := s.get("/api/workflows?status=running"); !strings.Contains(string(a.body), `"workflows":[]`) {
		t.Fatalf("GET /api/workflows?status=running: %s", a.body)
	}
	// A job of a step names its workflow and step.
	job := s.get(fmt.Sprintf("/api/jobs/%d", d.ID)).json(t)
	if num(job, "workflow_id") != v.ID || job["step"] != "D" {
		t.Fatalf("GET /api/jobs/%d: %v, want workflow_id %d and step D", d.ID, job, v.ID)
	}
	// The jobs of a workflow, and only those.
	s.submit(`{"queue":"etl","kind":"plain"}`)
	if got := s.get(fmt.Sprintf("/api/jobs?workflow=%d", v.ID)).json(t)["jobs"].([]any); len(got) != 4 {
		t.Fatalf("GET /api/jobs?workflow=%d: %d jobs, want the 4 steps'", v.ID, len(got))
	}
	if a := s.get(fmt.Sprintf("/api/jobs?workflow=%d&status=dead_letter", v.ID)); a.status != 400 {
		t.Fatalf("workflow with status=dead_letter: %d %s, want 400", a.status, a.body)
	}
}

// Done when 2: a cycle, an unknown dependency, a duplicate name and a
// malformed dependency are 400 naming the step, and nothing is stored.
func TestWorkflowBadInputStoresNothing(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	for _, tc := range []struct{ name, body, code, field, want string }{
		{"cycle", `{"name":"w","steps":[{"step":"a","kind":"k","depends_on":["c"]},{"step":"b","kind":"k","depends_on":["a"]},{"step":"c","kind":"k","depends_on":["b"]},{"step":"root","kind":"k"}]}`,
			"invalid_field", "steps", "cycle"},
		{"unknown dependency", `{"name":"w","steps":[{"step":"a","kind":"k"},{"step":"b","kind":"k","depends_on":["nope"]}]}`,
			"invalid_field", "steps[1].depends_on", `step \"b\" depends on \"nope\"`},
		{"duplicate", `{"name":"w","steps":[{"step":"a","kind":"k"},{"step":"a","kind":"k"}]}`,
			"invalid_field", "steps[1].step", `step \"a\" is named twice`},
		{"itself", `{"name":"w","steps":[{"step":"a","kind":"k","depends_on":["a"]}]}`,
			"invalid_field", "steps[0].depends_on", "depends on itself"},
		{"bad step job", `{"name":"w","steps":[{"step":"a","kind":"k"},{"step":"b","kind":"k","priority":5000}]}`,
			"invalid_field", "steps[1].priority", `step \"b\"`},
		{"idempotency key", `{"name":"w","steps":[{"step":"a","kind":"k","idempotency_key":"x"}]}`,
			"invalid_field", "steps[0].idempotency_key", "cannot carry an idempotency key"},
		{"on_failure value", `{"name":"w","steps":[{"step":"a","kind":"k"},{"step":"b","kind":"k","depends_on":[{"step":"a","on_failure":"ignore"}]}]}`,
			"invalid_field", "steps[1].depends_on", "continue"},
		{"no name", `{"steps":[{"step":"a","kind":"k"}]}`, "invalid_field", "name", "needs a name"},
		{"no steps", `{"name":"w","steps":[]}`, "invalid_field", "steps", "at least one step"},
		{"unknown field", `{"name":"w","steps":[{"step":"a","kind":"k","after":["b"]}]}`, "invalid_field", "after", "unknown field"},
		{"dependency shape", `{"name":"w","steps":[{"step":"a","kind":"k"},{"step":"b","kind":"k","depends_on":[{"name":"a"}]}]}`, "invalid_field", "", "a dependency is a step name"},
		{"not json", `{"name":`, "invalid_json", "", "truncated"},
	} {
		a := s.post("/api/workflows", tc.body)
		if a.status != http.StatusBadRequest || a.code(t) != tc.code || !strings.Contains(string(a.body), tc.want) {
			t.Errorf("%s: %d %s, want 400 %s saying %q", tc.name, a.status, a.body, tc.code, tc.want)
		}
		if tc.field != "" && !strings.Contains(string(a.body), `"field":"`+tc.field+`"`) {
			t.Errorf("%s: %s, want field %s", tc.name, a.body, tc.field)
		}
	}
	if a := s.post("/api/workflows", diamond, "Idempotency-Key", "k1"); a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"Idempotency-Key"`) {
		t.Errorf("a workflow with an Idempotency-Key: %d %s, want 400 naming the header", a.status, a.body)
	}
	if a := s.get("/api/workflows"); !strings.Contains(string(a.body), `"workflows":[]`) {
		t.Fatalf("workflows after refused submissions: %s", a.body)
	}
	if a := s.get("/api/jobs"); !strings.Contains(string(a.body), `"jobs":[]`) {
		t.Fatalf("jobs after refused submissions: %s", a.body)
	}
}

// Done when 3, and on_failure "continue": a dead step leaves its
// dependants waiting and the workflow blocked; its replay from the DLQ
// resumes it. A "continue" dependant runs with the failure in parents.
func TestWorkflowDeadStepBlocksAndReplayResumes(t *testing.T) {
	onBothStores(t, testWorkflowDeadStepBlocksAndReplayResumes)
}

func testWorkflowDeadStepBlocksAndReplayResumes(t *testing.T, s *server) {
	v := s.submitWorkflow(`{"name":"w","steps":[
		{"step":"B","queue":"q","kind":"k"},
		{"step":"D","queue":"q","kind":"k","depends_on":["B"]},
		{"step":"report","queue":"r","kind":"k","depends_on":[{"step":"B","on_failure":"continue"}]}]}`)
	b := s.claimStep("q")
	if a := s.post(fmt.Sprintf("/api/jobs/%d/fail", b.ID), fmt.Sprintf(`{"lease":%d,"error":"disk full","retry":false}`, b.Lease)); a.status != http.StatusOK {
		t.Fatalf("fail B: %d %s", a.status, a.body)
	}
	blocked := s.workflow(v.ID)
	if blocked.Status != "blocked" || blocked.FailedCount != 1 {
		t.Fatalf("after B dead-lettered: %+v, want blocked", blocked)
	}
	if st, _ := blocked.step(t, "B"); st != "dead_letter" {
		t.Fatalf("B: %s, want dead_letter", st)
	}
	if st, _ := blocked.step(t, "D"); st != "waiting" {
		t.Fatalf("D: %s, want waiting", st)
	}
	s.noClaim("q")
	r := s.claimStep("r")
	if r.Step != "report" || len(r.Parents) != 1 || r.Parents[0].Status != "dead_letter" || !strings.Contains(r.Parents[0].Error, "disk full") || string(r.Parents[0].Result) != "null" {
		t.Fatalf("report's claim: %+v, want parent B dead_letter with its error", r)
	}
	s.completeJob(r, `null`)

	a := s.post(fmt.Sprintf("/api/dlq/%d/replay", b.ID), `{"max_attempts":3}`)
	if a.status != http.StatusCreated {
		t.Fatalf("replay B: %d %s", a.status, a.body)
	}
	if w := s.workflow(v.ID); w.Status != "running" {
		t.Fatalf("after the replay: %+v, want running", w)
	}
	b2 := s.claimStep("q")
	if b2.Step != "B" || b2.ID == b.ID {
		t.Fatalf("claim after replay: %+v, want B's new job", b2)
	}
	s.completeJob(b2, `{"ok":true}`)
	d := s.claimStep("q")
	if d.Step != "D" || d.Parents[0].Status != "done" || string(d.Parents[0].Result) != `{"ok":true}` || d.Parents[0].JobID != b2.ID {
		t.Fatalf("D's claim: %+v, want B done by its replayed job", d)
	}
	s.completeJob(d, `null`)
	if w := s.workflow(v.ID); w.Status != "done" || w.DoneCount != 3 {
		t.Fatalf("at the end: %+v, want done", w)
	}
}

// Done when 4: a cancel cancels the unfinished steps (queued, waiting),
// asks the running ones to stop, and nothing is claimed afterwards; a
// second cancel is 409; the audit trail has it.
func TestWorkflowCancel(t *testing.T) { onBothStores(t, testWorkflowCancel) }

func testWorkflowCancel(t *testing.T, s *server) {
	v := s.submitWorkflow(`{"name":"w","steps":[
		{"step":"run","queue":"q","kind":"k"},{"step":"wait","queue":"q","kind":"k"},
		{"step":"after","queue":"q","kind":"k","depends_on":["run","wait"]}]}`)
	running := s.claimStep("q")
	a := s.post(fmt.Sprintf("/api/workflows/%d/cancel", v.ID), ``)
	if a.status != http.StatusOK {
		t.Fatalf("cancel: %d %s", a.status, a.body)
	}
	var got workflowView
	json.Unmarshal(a.body, &got)
	if got.Status != "cancelled" {
		t.Fatalf("cancel answer: %s, want the workflow cancelled", a.body)
	}
	other, _ := got.step(t, "wait")
	if running.Step == "wait" {
		other, _ = got.step(t, "run")
	}
	if st, _ := got.step(t, "after"); st != "cancelled" || other != "cancelled" {
		t.Fatalf("after the cancel: after %s, the queued step %s; want both cancelled", st, other)
	}
	if job := s.get(fmt.Sprintf("/api/jobs/%d", running.ID)).json(t); job["cancel_requested"] != true {
		t.Fatalf("the running step's job: %v, want cancel_requested", job)
	}
	s.noClaim("q")
	s.completeJob(running, `null`) // its worker finishes anyway: nothing is released
	s.noClaim("q")
	if w := s.workflow(v.ID); w.Status != "cancelled" {
		t.Fatalf("after the running step completed: %+v", w)
	}
	again := s.post(fmt.Sprintf("/api/workflows/%d/cancel", v.ID), `{}`)
	if again.status != http.StatusConflict || again.code(t) != "illegal_transition" {
		t.Fatalf("second cancel: %d %s, want 409 illegal_transition", again.status, again.body)
	}
	audit := s.get("/api/audit?action=workflow.cancel")
	if audit.status != http.StatusOK || !strings.Contains(string(audit.body), fmt.Sprintf(`"target":"workflow %d"`, v.ID)) {
		t.Fatalf("audit of the cancel: %d %s", audit.status, audit.body)
	}
	if a := s.post(fmt.Sprintf("/api/workflows/%d/cancel", v.ID), `{"force":true}`); a.status != http.StatusBadRequest {
		t.Fatalf("cancel with an unknown field: %d %s, want 400", a.status, a.body)
	}
}

func TestWorkflowNotFoundAndBadQueries(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/api/workflows/99", 404, "not_found"},
		{"POST", "/api/workflows/99/cancel", 404, "not_found"},
		{"GET", "/api/workflows/x", 400, "invalid_field"},
		{"GET", "/api/workflows?status=bogus", 400, "invalid_field"},
		{"GET", "/api/workflows?limit=0", 400, "invalid_field"},
		{"GET", "/api/workflows?cursor=zzz", 400, "invalid_field"},
		{"GET", "/api/workflows?state=done", 400, "invalid_field"},
		{"GET", "/api/workflows/1?wait=1s", 400, "invalid_field"},
	} {
		var a answer
		if tc.method == "GET" {
			a = s.get(tc.path)
		} else {
			a = s.post(tc.path, ``)
		}
		if a.status != tc.status || a.code(t) != tc.code {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, a.status, a.body, tc.status, tc.code)
		}
	}
}

// Pages of workflows, newest first, filtered by name.
func TestWorkflowListPages(t *testing.T) { onBothStores(t, testWorkflowListPages) }

func testWorkflowListPages(t *testing.T, s *server) {
	var ids []int64
	for _, n := range []string{"nightly-etl", "report", "nightly-backup"} {
		ids = append(ids, s.submitWorkflow(`{"name":"`+n+`","steps":[{"step":"a","kind":"k"}]}`).ID)
	}
	page := s.get("/api/workflows?limit=2").json(t)
	list := page["workflows"].([]any)
	cursor, _ := page["next_cursor"].(string)
	if len(list) != 2 || num(list[0].(map[string]any), "id") != ids[2] || cursor == "" {
		t.Fatalf("first page: %v", page)
	}
	rest := s.get("/api/workflows?limit=2&cursor=" + cursor).json(t)
	if l := rest["workflows"].([]any); len(l) != 1 || num(l[0].(map[string]any), "id") != ids[0] || rest["next_cursor"] != nil {
		t.Fatalf("second page: %v", rest)
	}
	named := s.get("/api/workflows?name=nightly").json(t)["workflows"].([]any)
	if len(named) != 2 {
		t.Fatalf("?name=nightly: %v, want the two nightly workflows", named)
	}
	w := list[0].(map[string]any)
	for _, k := range []string{"id", "name", "tags", "status", "step_count", "done_count", "failed_count", "created_at", "updated_at", "finished_at"} {
		if _, ok := w[k]; !ok {
			t.Errorf("a listed workflow has no %q: %v", k, w)
		}
	}
}

// The callback shorthand makes a batch of N steps and a step after all of
// them; 10,000 steps fit in one request (the route's body cap is 16 MiB),
// and a body over the cap is 413 before it is read.
func TestWorkflowBatchWithCallbackOf10000Steps(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	var b strings.Builder
	b.WriteString(`{"name":"thumbnails","steps":[`)
	for i := range 10000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"step":"img-%05d","queue":"thumbs","kind":"thumbnail","payload":{"bucket":"uploads-production-eu-west-1","key":"uploads/2026/11/30/customer-photos/image-%05d.jpg","sizes":[64,256,1024],"format":"webp","quality":85,"strip_metadata":true}}`, i, i)
	}
	b.WriteString(`],"callback":{"queue":"thumbs","kind":"notify","payload":{"email":"ops@example.com"},"on_failure":"continue"}}`)
	body := b.String()
	if len(body) <= 2<<20+64<<10 {
		t.Fatalf("the workflow is %d bytes; make it larger than a single job's body cap", len(body))
	}
	start := time.Now()
	v := s.submitWorkflow(body)
	t.Logf("%d-byte workflow of 10,001 steps submitted in %v", len(body), time.Since(start))
	if v.StepCount != 10001 || len(v.Steps) != 10001 {
		t.Fatalf("step_count %d, %d steps; want 10001", v.StepCount, len(v.Steps))
	}
	if st, _ := v.step(t, "callback"); st != "waiting" {
		t.Fatalf("callback: %s, want waiting", st)
	}
	for _, st := range v.Steps {
		if st.Step == "callback" && st.WaitingOn != 10000 {
			t.Fatalf("callback waits on %d, want 10000", st.WaitingOn)
		}
	}
	big := `{"name":"big","steps":[{"step":"a","kind":"k","payload":"` + strings.Repeat("x", 16<<20) + `"}]}`
	if a := s.post("/api/workflows", big); a.status != http.StatusRequestEntityTooLarge || a.code(t) != "too_large" || !strings.Contains(string(a.body), "the limit is 16777216") {
		t.Fatalf("a 16 MiB workflow: %d %.200s, want 413 too_large naming the route's limit", a.status, a.body)
	}
	if a := s.get("/api/workflows"); strings.Contains(string(a.body), `"big"`) {
		t.Fatal("the refused workflow was stored")
	}
}

// Tokens: submit needs role submit and, with a queue list, every step's
// queue in it; reads and cancel span queues, so a token with a queue list
// may not use them.
func TestWorkflowTokens(t *testing.T) {
	tokens := []ui.Token{
		{Name: "producer", Secret: "submit-token-0123456789", Role: ui.RoleSubmit},
		{Name: "etl-admin", Secret: "etl-admin-token-0123456789", Role: ui.RoleAdmin, Queues: []string{"etl"}},
		{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead},
		{Name: "boss", Secret: "admin-token-0123456789"},
	}
	s := newServer(t, ui.Options{Tokens: tokens}, false)
	as := func(i int) []string { return []string{"Authorization", "Bearer " + tokens[i].Secret} }
	call := func(who int, method, path, body string) answer {
		t.Helper()
		return s.do(method, path, "application/json", strings.NewReader(body), as(who)...)
	}
	if a := call(0, "POST", "/api/workflows", diamond); a.status != http.StatusCreated {
		t.Fatalf("producer submits: %d %s", a.status, a.body)
	}
	if a := call(2, "POST", "/api/workflows", diamond); a.status != http.StatusForbidden {
		t.Fatalf("viewer submits: %d %s, want 403", a.status, a.body)
	}
	if a := call(1, "POST", "/api/workflows", diamond); a.status != http.StatusCreated {
		t.Fatalf("etl-admin submits a workflow all in etl: %d %s", a.status, a.body)
	}
	mixed := `{"name":"mixed","steps":[{"step":"a","queue":"etl","kind":"k"},{"step":"b","kind":"k","depends_on":["a"]}]}`
	a := call(1, "POST", "/api/workflows", mixed)
	if a.status != http.StatusForbidden || a.code(t) != "forbidden" || !strings.Contains(string(a.body), `queue \"default\" (step \"b\"`) {
		t.Fatalf("etl-admin submits a step of queue default: %d %s, want 403 naming step b", a.status, a.body)
	}
	cb := `{"name":"cb","steps":[{"step":"a","queue":"etl","kind":"k"}],"callback":{"queue":"mail","kind":"k"}}`
	if a := call(1, "POST", "/api/workflows", cb); a.status != http.StatusForbidden || !strings.Contains(string(a.body), `queue \"mail\" (step \"callback\"`) {
		t.Fatalf("etl-admin submits a callback in queue mail: %d %s, want 403", a.status, a.body)
	}
	for _, r := range [][2]string{{"GET", "/api/workflows"}, {"GET", "/api/workflows/1"}, {"POST", "/api/workflows/1/cancel"}} {
		if a := call(1, r[0], r[1], ""); a.status != http.StatusForbidden || !strings.Contains(string(a.body), "spans every queue") {
			t.Errorf("etl-admin %s %s: %d %s, want 403", r[0], r[1], a.status, a.body)
		}
	}
	if a := call(2, "GET", "/api/workflows/1", ""); a.status != http.StatusOK {
		t.Fatalf("viewer reads a workflow: %d %s", a.status, a.body)
	}
	if a := call(0, "POST", "/api/workflows/1/cancel", ""); a.status != http.StatusForbidden || !strings.Contains(string(a.body), "role admin") {
		t.Fatalf("producer cancels: %d %s, want 403 naming role admin", a.status, a.body)
	}
	if a := call(3, "POST", "/api/workflows/1/cancel", ""); a.status != http.StatusOK {
		t.Fatalf("boss cancels: %d %s", a.status, a.body)
	}
	if a := call(3, "GET", "/api/workflows", ""); strings.Count(string(a.body), `"id":`) != 2 {
		t.Fatalf("workflows stored: %s, want the two submitted (none of the refused)", a.body)
	}
}

// workflow.* events reach a stream without filters; a stream filtered by
// queue, and so every stream of a token with a queue list, never sees them.
func TestWorkflowEvents(t *testing.T) {
	tokens := []ui.Token{{Name: "boss", Secret: "admin-token-0123456789"}, {Name: "etl", Secret: "etl-token-0123456789", Queues: []string{"etl"}}}
	s := newServer(t, ui.Options{Tokens: tokens}, false)
	stream := func(token, query string) <-chan string {
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/api/events"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /api/events%s: %v %v", query, resp, err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		lines := make(chan string, 1000)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "event: ") {
					lines <- strings.TrimPrefix(l, "event: ")
				}
			}
		}()
		return lines
	}
	// until reads events up to and including the first of type last.
	until := func(lines <-chan string, last string) []string {
		t.Helper()
		var got []string
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stream closed after %v", got)
				}
				got = append(got, l)
				if l == last {
					return got
				}
			case <-timeout:
				t.Fatalf("no %s within 10s; got %v", last, got)
			}
		}
	}
	all := stream(tokens[0].Secret, "")
	etlFilter := stream(tokens[0].Secret, "?queue=etl")
	scoped := stream(tokens[1].Secret, "")
	time.Sleep(50 * time.Millisecond) // the subscriptions are made once the answers started
	auth := []string{"Authorization", "Bearer " + tokens[0].Secret}
	post := func(path, body string) answer {
		t.Helper()
		a := s.do("POST", path, "application/json", strings.NewReader(body), auth...)
		if a.status >= 300 {
			t.Fatalf("POST %s: %d %s", path, a.status, a.body)
		}
		return a
	}
	post("/api/workflows", `{"name":"w","steps":[{"step":"a","queue":"etl","kind":"k"}]}`)
	a := s.do("POST", "/api/queues/etl/claim", "application/json", strings.NewReader(`{}`), auth...)
	var claim struct{ Jobs []claimed }
	json.Unmarshal(a.body, &claim)
	if len(claim.Jobs) != 1 {
		t.Fatalf("claim: %s", a.body)
	}
	post(fmt.Sprintf("/api/jobs/%d/complete", claim.Jobs[0].ID), fmt.Sprintf(`{"lease":%d}`, claim.Jobs[0].Lease))
	post("/api/jobs", `{"queue":"etl","kind":"marker"}`)
	if got := strings.Join(until(all, "workflow.done"), " "); !strings.Contains(got, "workflow.submitted") {
		t.Fatalf("unfiltered stream: %s, want workflow.submitted then workflow.done", got)
	}
	a = post("/api/workflows", `{"name":"w2","steps":[{"step":"a","queue":"etl","kind":"k"}]}`)
	var w2 struct{ ID int64 }
	json.Unmarshal(a.body, &w2)
	post(fmt.Sprintf("/api/workflows/%d/cancel", w2.ID), `{}`)
	until(all, "workflow.cancelled")
	for name, lines := range map[string]<-chan string{"?queue=etl": etlFilter, "the etl token's": scoped} {
		got := until(lines, "job.submitted") // the step's job
		got = append(got, until(lines, "job.submitted")...)
		for _, ev := range got {
			if strings.HasPrefix(ev, "workflow.") {
				t.Errorf("%s stream got %s: %v", name, ev, got)
			}
		}
	}
}
