package ui_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

// hostileName is a workflow name a page must show as text, never as markup.
const hostileName = `<script>alert("wf")</script> & <b>bold</b> "q" 'a'`

// pageDiamond is the workflow the page tests look at, as submitted.
type pageDiamond struct {
	ID   int64
	Jobs map[string]int64 // step → job id, once released
}

// submitPageDiamond submits A; B and C after A; D after B and C (on C
// with on_failure "continue") in queue "flows", completes A and claims B,
// so the steps are done, processing, queued and waiting.
func submitPageDiamond(t *testing.T, env *uiEnv) pageDiamond {
	t.Helper()
	ctx := t.Context()
	step := func(name, kind string, deps ...app.Dependency) app.StepInput {
		return app.StepInput{SubmitInput: app.SubmitInput{Queue: "flows", Kind: kind, Payload: json.RawMessage(`{}`)}, Step: name, DependsOn: deps}
	}
	wv, err := env.svc.SubmitWorkflow(ctx, app.WorkflowInput{Name: hostileName, Tags: []string{"nightly"}, Steps: []app.StepInput{
		step("A", "etl.download"),
		step("B", "etl.transform:users", app.Dependency{Step: "A"}),
		step("C", "etl.transform:orders", app.Dependency{Step: "A"}),
		step("D", "etl.load", app.Dependency{Step: "B"}, app.Dependency{Step: "C", OnFailure: app.OnFailureContinue}),
	}})
	if err != nil {
		t.Fatalf("SubmitWorkflow: %v", err)
	}
	a := mustClaim(t, env.svc, "flows", 10)
	if len(a) != 1 || a[0].Step != "A" {
		t.Fatalf("first claim of flows: %d jobs, want step A alone", len(a))
	}
	if err := env.svc.Complete(ctx, a[0].ID, a[0].Lease, json.RawMessage(`{"rows":3}`)); err != nil {
		t.Fatal(err)
	}
	if b := mustClaim(t, env.svc, "flows", 1); len(b) != 1 || b[0].Step != "B" {
		t.Fatalf("second claim of flows: %+v, want step B", b)
	}
	got, err := env.svc.GetWorkflow(ctx, wv.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := pageDiamond{ID: got.ID, Jobs: map[string]int64{}}
	for _, s := range got.Steps {
		if s.JobID != 0 {
			d.Jobs[s.Name] = s.JobID
		}
	}
	return d
}

// svgBox is one step's box of the graph as the page draws it.
type svgBox struct {
	Class, Href, Title, Label, State string
}

// svgGraph is the workflow graph of a page, read as XML: every box and
// edge, so the test checks the drawing's structure, not its spelling.
type svgGraph struct {
	Boxes map[string]svgBox // by label
	Edges map[string]string // "A → B" → class
}

// readGraph finds the graph's <svg> in page and decodes it strictly: it
// must be well-formed XML, which also shows no text broke out of its element.
func readGraph(t *testing.T, page string) svgGraph {
	t.Helper()
	i := strings.Index(page, `<svg class="wf-graph"`)
	if i < 0 {
		t.Fatalf("the page has no graph")
	}
	j := strings.Index(page[i:], "</svg>")
	dec := xml.NewDecoder(strings.NewReader(page[i : i+j+len("</svg>")]))
	g := svgGraph{Boxes: map[string]svgBox{}, Edges: map[string]string{}}
	var stack []xml.StartElement
	var box *svgBox
	attr := func(e xml.StartElement, name string) string {
		for _, a := range e.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the graph is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok)
			if strings.Contains(attr(tok, "class"), "wf-node") {
				box = &svgBox{Class: attr(tok, "class"), Href: attr(tok, "href")}
			}
		case xml.EndElement:
			if box != nil && strings.Contains(attr(stack[len(stack)-1], "class"), "wf-node") {
				g.Boxes[box.Label] = *box
				box = nil
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) == 0 {
				continue
			}
			top := stack[len(stack)-1]
			switch {
			case box != nil && top.Name.Local == "title":
				box.Title += string(tok)
			case box != nil && attr(top, "class") == "wf-label":
				box.Label += string(tok)
			case box != nil && attr(top, "class") == "wf-state":
				box.State += string(tok)
			case top.Name.Local == "title" && len(stack) > 1 && strings.HasPrefix(attr(stack[len(stack)-2], "class"), "wf-edge"):
				g.Edges[string(tok)] = attr(stack[len(stack)-2], "class")
			}
		}
	}
	return g
}

func TestPagesWorkflowListAndDetail(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	d := submitPageDiamond(t, env)
	u := newUIClient(t, env.URL)
	wfPath := fmt.Sprintf("/workflows/%d", d.ID)

	a := u.get("/workflows")
	wantStatus(t, "GET /workflows", a, http.StatusOK)
	wantBody(t, "GET /workflows", a, `<a href="/workflows" aria-current="page">Workflows</a>`, `href="`+wfPath+`"`,
		"badge-running", `<td class="r">1</td>`, `<td class="r">4</td>`, "nightly")
	a = u.get("/workflows?status=running&name=" + url.QueryEscape("<script>"))
	wantBody(t, "filtered by status and name", a, `href="`+wfPath+`"`, `value="&lt;script&gt;"`)
	a = u.get("/workflows?status=done")
	wantBody(t, "filtered to done", a, "No workflows match these filters.")
	if strings.Contains(a.body, `href="`+wfPath+`"`) {
		t.Error("the running workflow is listed under status done")
	}
	a = u.get("/workflows?status=bogus")
	wantStatus(t, "bad status", a, http.StatusBadRequest)
	wantBody(t, "bad status", a, "flash-error", "not one of running, blocked, done, cancelled")

	a = u.get(wfPath)
	wantStatus(t, "GET "+wfPath, a, http.StatusOK)
	for _, page := range []uiAnswer{a, u.get("/workflows")} {
		if strings.Contains(page.body, "<script>alert") || strings.Contains(page.body, "<b>bold") {
			t.Fatalf("the workflow's name reached a page unescaped")
		}
		wantBody(t, "escaped name", page, "&lt;script&gt;alert(&#34;wf&#34;)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;")
		if strings.Contains(page.body, " style=") || strings.Contains(page.body, "<style") || strings.Count(page.body, "<script") != strings.Count(page.body, "<script src=") {
			t.Errorf("a workflow page has inline style or script")
		}
	}
	wantBody(t, "workflow page", a, "Critical path", "Cancel workflow…", `href="`+wfPath+`/cancel"`, "2 of 2", // D waits on B and C
		fmt.Sprintf(`href="/jobs/%d">#%d</a>`, d.Jobs["A"], d.Jobs["A"]), "etl.transform:orders", "(even if it fails)",
		`data-refresh="5"`)

	g := readGraph(t, a.body)
	if len(g.Boxes) != 4 {
		t.Fatalf("the graph has boxes %v, want A, B, C and D", g.Boxes)
	}
	for name, state := range map[string]string{"A": "done", "B": "processing", "C": "queued", "D": "waiting"} {
		b := g.Boxes[name]
		if !strings.Contains(" "+b.Class+" ", " st-"+state+" ") || b.State != state {
			t.Errorf("box %s: class %q, state text %q; want st-%s and %q", name, b.Class, b.State, state, state)
		}
		if !strings.HasPrefix(b.Title, name+": "+state) || !strings.Contains(b.Title, "queue flows") {
			t.Errorf("box %s: title %q", name, b.Title)
		}
		want := ""
		if id, ok := d.Jobs[name]; ok {
			want = fmt.Sprintf("/jobs/%d", id)
		}
		if b.Href != want {
			t.Errorf("box %s links to %q, want %q", name, b.Href, want)
		}
	}
	if !strings.Contains(g.Boxes["B"].Title, "kind etl.transform:users") {
		t.Errorf("box B's title %q does not name its kind", g.Boxes["B"].Title)
	}
	wantEdges := map[string]string{"A → B": "wf-edge", "A → C": "wf-edge", "B → D": "wf-edge", "C → D": "wf-edge wf-edge-continue"}
	if len(g.Edges) != len(wantEdges) {
		t.Errorf("the graph's edges are %v, want %v", g.Edges, wantEdges)
	}
	for e, class := range wantEdges {
		got, ok := g.Edges[e]
		if !ok || !strings.HasPrefix(strings.ReplaceAll(got, " wf-edge-critical", ""), class) {
			t.Errorf("edge %s: class %q (present %v), want %q", e, got, ok, class)
		}
	}

	// The steps table filtered by state, and a state that is none.
	a = u.get(wfPath + "?state=queued")
	wantStatus(t, "steps queued", a, http.StatusOK)
	wantBody(t, "steps queued", a, fmt.Sprintf(`href="/jobs/%d">#%d</a>`, d.Jobs["C"], d.Jobs["C"]), `aria-current="true">queued · 1</a>`)
	if strings.Contains(a.body, fmt.Sprintf(`href="/jobs/%d">#%d</a>`, d.Jobs["A"], d.Jobs["A"])) {
		t.Error("the table filtered to queued steps lists step A")
	}
	a = u.get(wfPath + "?state=bogus")
	wantStatus(t, "bad state", a, http.StatusBadRequest)
	wantBody(t, "bad state", a, "flash-error", "is not one of waiting")

	// A step's job links to its workflow.
	a = u.get(fmt.Sprintf("/jobs/%d", d.Jobs["B"]))
	wantBody(t, "job of step B", a, fmt.Sprintf(`<a class="wf-link" href="%s">step <span class="mono">B</span> of workflow #%d</a>`, wfPath, d.ID))
	a = u.get(fmt.Sprintf("/jobs/%d", env.ids.Queued))
	if strings.Contains(a.body, "of workflow #") {
		t.Error("a job outside any workflow names a workflow")
	}

	for path, want := range map[string]int{"/workflows/99999999": 404, "/workflows/abc": 400, "/workflows/99999999/cancel": 404} {
		a := u.get(path)
		wantStatus(t, path, a, want)
		wantBody(t, path, a, "<h1>")
	}
}

func TestPagesWorkflowCancel(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	d := submitPageDiamond(t, env)
	ctx := t.Context()
	u := newUIClient(t, env.URL)
	wfPath := fmt.Sprintf("/workflows/%d", d.ID)
	status := func() app.WorkflowStatus {
		t.Helper()
		wv, err := env.svc.GetWorkflow(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		return wv.Status
	}
	u.get(wfPath + "/cancel") // the confirm page holds the form's CSRF token
	if u.csrf == "" {
		t.Fatal("the confirm page has no CSRF token")
	}

	// Without the CSRF token, or from another site: refused.
	a := u.do(http.MethodPost, wfPath+"/cancel", url.Values{"confirm": {"yes"}}, nil)
	wantStatus(t, "cancel without the CSRF token", a, http.StatusForbidden)
	a = u.do(http.MethodPost, wfPath+"/cancel", url.Values{"confirm": {"yes"}, "_csrf": {u.csrf}}, map[string]string{"Origin": "https://evil.example"})
	wantStatus(t, "cancel from another site", a, http.StatusForbidden)
	// With the token but not from the confirm page: sent to the confirm page.
	a = u.post(wfPath+"/cancel", nil)
	wantStatus(t, "cancel without the confirm", a, http.StatusSeeOther)
	if loc := a.header.Get("Location"); loc != wfPath+"/cancel" {
		t.Fatalf("cancel without the confirm: sent to %q, want the confirm page", loc)
	}
	if st := status(); st != app.WorkflowRunning {
		t.Fatalf("after refused cancels the workflow is %s", st)
	}

	a = u.get(wfPath + "/cancel")
	wantStatus(t, "confirm", a, http.StatusOK)
	wantBody(t, "confirm", a, fmt.Sprintf("Cancel workflow #%d “&lt;script&gt;", d.ID), "1 waiting step is cancelled", "1 queued job is cancelled",
		"the worker of 1 processing job is asked to stop at its next heartbeat", fmt.Sprintf(`action="%s/cancel"`, wfPath),
		`name="confirm" value="yes"`, "Cancel workflow</button>", `href="`+wfPath+`"`)
	if strings.Contains(a.body, "<script>alert") {
		t.Fatal("the confirm page shows the workflow's name unescaped")
	}
	if st := status(); st != app.WorkflowRunning {
		t.Fatalf("the confirm page cancelled: %s", st)
	}

	a = u.follow(u.post(wfPath+"/cancel", url.Values{"confirm": {"yes"}}))
	wantBody(t, "after cancel", a, fmt.Sprintf("Workflow #%d cancelled.", d.ID), "processing job is told at its next heartbeat", "badge-cancelled")
	if strings.Contains(a.body, "Cancel workflow…") {
		t.Error("a cancelled workflow still offers to cancel")
	}
	if st := status(); st != app.WorkflowCancelled {
		t.Fatalf("after the confirmed cancel the workflow is %s", st)
	}
	audit, err := env.svc.Audit(ctx, app.AuditFilter{Action: "workflow.cancel"})
	if err != nil || len(audit) != 1 || audit[0].Actor != "local" || audit[0].Target != fmt.Sprintf("workflow %d", d.ID) {
		t.Fatalf("audit of the cancel: %+v, %v", audit, err)
	}
	a = u.get(wfPath)
	if strings.Contains(a.body, "2 of 2") {
		t.Error("after the cancel step D still reads as waiting on its parents")
	}
	g := readGraph(t, a.body)
	if c, dd := g.Boxes["C"].Class, g.Boxes["D"].Class; !strings.Contains(c, "st-cancelled") || !strings.Contains(dd, "st-cancelled") {
		t.Errorf("after the cancel: C %q, D %q; want both st-cancelled", c, dd)
	}

	// Once finished, there is nothing to confirm, and a second post is a message.
	a = u.follow(u.get(wfPath + "/cancel"))
	wantBody(t, "confirm after cancel", a, "flash-error", "is cancelled: there is nothing to cancel")
	a = u.follow(u.post(wfPath+"/cancel", url.Values{"confirm": {"yes"}}))
	wantBody(t, "second cancel", a, "flash-error")
}

// A dead step blocks its workflow: the page says so and leads to the
// step's dead-letter row, where the replay is.
func TestPagesWorkflowBlocked(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	ctx := t.Context()
	wv, err := env.svc.SubmitWorkflow(ctx, app.WorkflowInput{Name: "chain", Steps: []app.StepInput{
		{SubmitInput: app.SubmitInput{Queue: "flows", Kind: "fetch"}, Step: "fetch"},
		{SubmitInput: app.SubmitInput{Queue: "flows", Kind: "store"}, Step: "store", DependsOn: []app.Dependency{{Step: "fetch"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	j := mustClaim(t, env.svc, "flows", 1)[0]
	if _, err := env.svc.Fail(ctx, j.ID, app.FailInput{Lease: j.Lease, Error: "<i>404</i> from origin", Retry: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	u := newUIClient(t, env.URL)
	a := u.get(fmt.Sprintf("/workflows/%d", wv.ID))
	wantStatus(t, "blocked workflow", a, http.StatusOK)
	dlq := fmt.Sprintf("/dlq/%d", j.ID)
	wantBody(t, "blocked workflow", a, "badge-blocked", "flash-warn", "Replay it from", `href="`+dlq+`">#`, "&lt;i&gt;404&lt;/i&gt; from origin")
	g := readGraph(t, a.body)
	if b := g.Boxes["fetch"]; !strings.Contains(b.Class, "st-dead_letter") || b.Href != dlq || b.State != "dead letter" {
		t.Errorf("the dead step's box: %+v, want st-dead_letter linking to %s", b, dlq)
	}
	if b := g.Boxes["store"]; !strings.Contains(b.Class, "st-waiting") || b.Href != "" {
		t.Errorf("the step after it: %+v, want waiting, without a link", b)
	}
	a = u.get("/workflows?status=blocked")
	wantBody(t, "blocked list", a, fmt.Sprintf(`href="/workflows/%d"`, wv.ID), `<span class="bad">1</span>`)
}

// A token that may only read sees the workflow but neither the button nor
// the confirm page; an admin's cancel is audited under its name.
func TestPagesWorkflowCancelNeedsAdmin(t *testing.T) {
	tokens := []ui.Token{{Name: "viewer", Secret: "read-token-0123456789", Role: ui.RoleRead}, {Name: "boss", Secret: testToken}}
	env := newUIEnv(t, ui.Options{Tokens: tokens}, false)
	d := submitPageDiamond(t, env)
	wfPath := fmt.Sprintf("/workflows/%d", d.ID)

	viewer := newUIClient(t, env.URL)
	viewer.get("/login")
	viewer.login(tokens[0].Secret)
	a := viewer.get(wfPath)
	wantStatus(t, "viewer", a, http.StatusOK)
	if strings.Contains(a.body, "Cancel workflow") {
		t.Error("a read-only token is offered the cancel")
	}
	wantStatus(t, "viewer's confirm page", viewer.get(wfPath+"/cancel"), http.StatusForbidden)
	wantStatus(t, "viewer's cancel", viewer.post(wfPath+"/cancel", url.Values{"confirm": {"yes"}}), http.StatusForbidden)

	boss := newUIClient(t, env.URL)
	boss.get("/login")
	boss.login(testToken)
	boss.get(wfPath + "/cancel")
	boss.follow(boss.post(wfPath+"/cancel", url.Values{"confirm": {"yes"}}))
	audit, _ := env.svc.Audit(t.Context(), app.AuditFilter{Action: "workflow.cancel"})
	if len(audit) != 1 || audit[0].Actor != "boss" {
		t.Fatalf("audit of the cancel: %+v, want one by boss", audit)
	}
}

// A workflow too big to draw says so, and its steps table goes page by page.
func TestPagesWorkflowTooBigToDraw(t *testing.T) {
	env := newUIEnv(t, ui.Options{}, false)
	in := app.WorkflowInput{Name: "fan-out", Steps: []app.StepInput{{SubmitInput: app.SubmitInput{Queue: "wide", Kind: "split"}, Step: "root"}}}
	for i := range 320 {
		in.Steps = append(in.Steps, app.StepInput{SubmitInput: app.SubmitInput{Queue: "wide", Kind: "part"},
			Step: fmt.Sprintf("part-%03d", i), DependsOn: []app.Dependency{{Step: "root"}}})
	}
	wv, err := env.svc.SubmitWorkflow(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	u := newUIClient(t, env.URL)
	path := fmt.Sprintf("/workflows/%d", wv.ID)
	a := u.get(path)
	wantStatus(t, path, a, http.StatusOK)
	if strings.Contains(a.body, "<svg class=\"wf-graph\"") {
		t.Fatal("a 321-step workflow is drawn")
	}
	wantBody(t, path, a, "This workflow has 321 steps: the graph is drawn for workflows of at most 300.", "321, 200 shown from row 1", `rel="next"`, `data-refresh="30"`)
	seen := map[string]bool{}
	for pages := 0; path != "" && pages < 5; pages++ {
		a := u.get(path)
		for _, m := range stepRowRE.FindAllStringSubmatch(a.body, -1) {
			if seen[m[1]] {
				t.Fatalf("step %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := nextRE.FindStringSubmatch(a.body); m != nil {
			path = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != 321 {
		t.Fatalf("paged through %d steps, want 321", len(seen))
	}
}

var stepRowRE = regexpMust(`<td><span class="mono strong">([^<]+)</span>`)
