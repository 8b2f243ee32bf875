package ui

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// step is a step as Service.GetWorkflow gives it: Status is the state shown.
func step(name, state string, job int64, deps ...string) *app.WorkflowStep {
	s := &app.WorkflowStep{Name: name, Queue: "etl", Kind: "etl." + strings.ToLower(name), Status: app.StepStatus(state), JobID: job, DependsOn: []app.Dependency{}}
	for _, d := range deps {
		dep := app.Dependency{Step: d}
		if strings.HasSuffix(d, "?") { // "C?": on_failure continue
			dep = app.Dependency{Step: strings.TrimSuffix(d, "?"), OnFailure: app.OnFailureContinue}
		}
		s.DependsOn = append(s.DependsOn, dep)
	}
	return s
}

func nodeOf(t *testing.T, g *graph, name string) graphNode {
	t.Helper()
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no box for step %s", name)
	return graphNode{}
}

func TestLayoutGraphDiamond(t *testing.T) {
	steps := []*app.WorkflowStep{
		step("A", "done", 11),
		step("B", "processing", 12, "A"),
		step("C", "dead_letter", 13, "A"),
		step("D", "waiting", 0, "B", "C?"),
	}
	g := layoutGraph(steps, []string{"A", "B", "D"})
	if g == nil {
		t.Fatal("layoutGraph drew nothing")
	}
	col := graphBoxW + graphColGap
	row := graphBoxH + graphRowGap
	if g.Layers != 3 || g.W != 2*graphPad+3*graphBoxW+2*graphColGap || g.H != 2*graphPad+2*graphBoxH+graphRowGap {
		t.Errorf("graph %d layers, %dx%d; want 3 layers, %dx%d", g.Layers, g.W, g.H, 2*graphPad+3*graphBoxW+2*graphColGap, 2*graphPad+2*graphBoxH+graphRowGap)
	}
	for name, want := range map[string]struct {
		layer, row, x, y int
		class, href      string
	}{
		"A": {0, 0, graphPad, graphPad + row/2, "wf-node st-done wf-critical", "/jobs/11"},
		"B": {1, 0, graphPad + col, graphPad, "wf-node st-processing wf-critical", "/jobs/12"},
		"C": {1, 1, graphPad + col, graphPad + row, "wf-node st-dead_letter", "/dlq/13"}, // where its replay is
		"D": {2, 0, graphPad + 2*col, graphPad + row/2, "wf-node st-waiting wf-critical", ""},
	} {
		n := nodeOf(t, g, name)
		if n.Layer != want.layer || n.Row != want.row || n.X != want.x || n.Y != want.y {
			t.Errorf("box %s: layer %d row %d at (%d,%d); want layer %d row %d at (%d,%d)", name, n.Layer, n.Row, n.X, n.Y, want.layer, want.row, want.x, want.y)
		}
		if n.Class != want.class || n.Href != want.href {
			t.Errorf("box %s: class %q href %q; want %q and %q", name, n.Class, n.Href, want.class, want.href)
		}
		if n.TextX <= n.X || n.NameY <= n.Y || n.StateY <= n.NameY || n.StateY >= n.Y+graphBoxH {
			t.Errorf("box %s at (%d,%d): its text at x %d, y %d and %d is not inside it", name, n.X, n.Y, n.TextX, n.NameY, n.StateY)
		}
	}
	if n := nodeOf(t, g, "C"); n.StateText != "dead letter" || !strings.Contains(n.Title, "C: dead letter\nqueue etl, kind etl.c\njob #13") {
		t.Errorf("box C: state %q, title %q", n.StateText, n.Title)
	}
	if n := nodeOf(t, g, "D"); !strings.Contains(n.Title, "after B, C (even if it fails)") {
		t.Errorf("box D: title %q does not name its dependencies", n.Title)
	}

	type edge struct{ parent, child, class string }
	want := []edge{{"A", "B", "wf-edge wf-edge-critical"}, {"A", "C", "wf-edge"}, {"B", "D", "wf-edge wf-edge-critical"}, {"C", "D", "wf-edge wf-edge-continue"}}
	if len(g.Edges) != len(want) {
		t.Fatalf("%d edges, want %d: %+v", len(g.Edges), len(want), g.Edges)
	}
	for i, e := range g.Edges {
		if w := want[i]; e.Parent != w.parent || e.Child != w.child || e.Class != w.class {
			t.Errorf("edge %d: %s → %s %q, want %s → %s %q", i, e.Parent, e.Child, e.Class, w.parent, w.child, w.class)
		}
		p, c := nodeOf(t, g, e.Parent), nodeOf(t, g, e.Child)
		if e.X1 != p.X+graphBoxW || e.Y1 != p.Y+graphBoxH/2 || e.X2 != c.X || e.Y2 != c.Y+graphBoxH/2 {
			t.Errorf("edge %s → %s runs (%d,%d)→(%d,%d); want from the parent's right side to the child's left", e.Parent, e.Child, e.X1, e.Y1, e.X2, e.Y2)
		}
		if !strings.HasPrefix(e.Path, fmt.Sprintf("M%d %dC", e.X1, e.Y1)) || !strings.HasSuffix(e.Path, fmt.Sprintf(" %d %d", e.X2, e.Y2)) {
			t.Errorf("edge %s → %s: path %q does not run between its ends", e.Parent, e.Child, e.Path)
		}
	}
}

// A step's layer is one more than its deepest parent's, however the steps
// are given; a layer's boxes follow their parents, so a crossing is undone.
func TestLayoutGraphLayersAndOrder(t *testing.T) {
	steps := []*app.WorkflowStep{
		step("late", "waiting", 0, "mid", "root1"), // given first, drawn last
		step("x", "queued", 1, "root2"),
		step("y", "queued", 2, "root1"),
		step("root1", "done", 3),
		step("root2", "done", 4),
		step("mid", "waiting", 0, "x", "y"),
	}
	g := layoutGraph(steps, nil)
	for name, layer := range map[string]int{"root1": 0, "root2": 0, "x": 1, "y": 1, "mid": 2, "late": 3} {
		if n := nodeOf(t, g, name); n.Layer != layer {
			t.Errorf("step %s in layer %d, want %d", name, n.Layer, layer)
		}
	}
	if g.Layers != 4 {
		t.Errorf("%d layers, want 4", g.Layers)
	}
	// root1 is above root2 (the order given), so y (after root1) goes above x.
	if y, x := nodeOf(t, g, "y"), nodeOf(t, g, "x"); y.Row != 0 || x.Row != 1 || y.Y >= x.Y {
		t.Errorf("y at row %d (y=%d), x at row %d (y=%d); want y above x, under their parents", y.Row, y.Y, x.Row, x.Y)
	}
	for _, e := range g.Edges {
		if strings.Contains(e.Class, "critical") {
			t.Errorf("edge %s → %s is critical without a critical path", e.Parent, e.Child)
		}
	}
	checkLanes(t, g)
	// root1 → late skips layers 1 and 2: a straight run across each.
	for _, e := range g.Edges {
		if e.Parent == "root1" && e.Child == "late" && (len(e.Lanes) != 2 || strings.Count(e.Path, "L") != 2) {
			t.Errorf("edge root1 → late: lanes %v, path %q; want a run across each of the 2 layers it skips", e.Lanes, e.Path)
		}
	}
}

// checkLanes wants every edge that skips layers to cross each of them in a
// gap between boxes, and an edge between neighbouring layers to have no lane.
func checkLanes(t *testing.T, g *graph) {
	t.Helper()
	for _, e := range g.Edges {
		p, c := nodeOf(t, g, e.Parent), nodeOf(t, g, e.Child)
		if len(e.Lanes) != c.Layer-p.Layer-1 {
			t.Errorf("edge %s → %s spans layers %d to %d with %d lanes", e.Parent, e.Child, p.Layer, c.Layer, len(e.Lanes))
			continue
		}
		for i, y := range e.Lanes {
			for _, n := range g.Nodes {
				if n.Layer == p.Layer+1+i && y >= n.Y && y <= n.Y+graphBoxH {
					t.Errorf("edge %s → %s crosses layer %d at %d, through box %s (%d to %d)", e.Parent, e.Child, n.Layer, y, n.Name, n.Y, n.Y+graphBoxH)
				}
			}
			if y <= 0 || y >= g.H {
				t.Errorf("edge %s → %s crosses layer %d at %d, outside the picture (height %d)", e.Parent, e.Child, p.Layer+1+i, y, g.H)
			}
		}
	}
}

// Edges that skip layers go round the boxes between, above, below or
// through the gaps, whatever the shape.
func TestLayoutGraphLanes(t *testing.T) {
	steps := []*app.WorkflowStep{step("src", "done", 1)}
	var parts []string
	for i := range 7 {
		n := fmt.Sprintf("p%d", i)
		parts = append(parts, n)
		steps = append(steps, step(n, "queued", int64(2+i), "src"))
	}
	steps = append(steps, step("gate", "waiting", 0, "p0", "p1"), step("tail", "waiting", 0, "gate"))
	steps = append(steps, step("sink", "waiting", 0, append(parts[2:], "gate", "src", "tail")...))
	g := layoutGraph(steps, nil)
	checkLanes(t, g)
	skipping := 0
	for _, e := range g.Edges {
		skipping += len(e.Lanes)
	}
	if skipping < 6 {
		t.Errorf("only %d layer crossings; the case means to test edges that skip layers", skipping)
	}
}

func TestLayoutGraphStatesAndLimits(t *testing.T) {
	var steps []*app.WorkflowStep
	for _, st := range append(stepStates, "released", `x" onmouseover="alert(1)`) {
		steps = append(steps, step("s"+fmt.Sprint(len(steps)), st, 0))
	}
	g := layoutGraph(steps, nil)
	for i, st := range stepStates {
		if n := g.Nodes[i]; n.Class != "wf-node st-"+st || n.State != st {
			t.Errorf("state %s: class %q", st, n.Class)
		}
	}
	for _, n := range g.Nodes[len(stepStates):] {
		if n.Class != "wf-node st-unknown" {
			t.Errorf("an unknown state gives class %q, want wf-node st-unknown", n.Class)
		}
	}
	long := strings.Repeat("n", 128)
	if n := layoutGraph([]*app.WorkflowStep{step(long, "queued", 1)}, nil).Nodes[0]; len([]rune(n.Label)) != graphLabelMax || !strings.HasSuffix(n.Label, "…") || !strings.HasPrefix(n.Title, long+": ") {
		t.Errorf("a 128-character name: label %q (%d runes), title %.40q…", n.Label, len([]rune(n.Label)), n.Title)
	}
	if layoutGraph(nil, nil) != nil {
		t.Error("no steps drew a graph")
	}
	many := make([]*app.WorkflowStep, graphMaxSteps+1)
	for i := range many {
		many[i] = step(fmt.Sprintf("s%d", i), "queued", int64(i+1))
	}
	if layoutGraph(many[:graphMaxSteps], nil) == nil || layoutGraph(many, nil) != nil {
		t.Errorf("a graph is drawn up to %d steps and not past", graphMaxSteps)
	}
	// A cycle cannot be stored, but would it be, the layout still ends.
	if g := layoutGraph([]*app.WorkflowStep{step("p", "waiting", 0, "q"), step("q", "waiting", 0, "p")}, nil); g == nil || len(g.Nodes) != 2 {
		t.Errorf("a cycle: %+v", g)
	}
}

// The graph template writes every text of a step escaped, and the SVG it
// writes is well-formed XML whose texts read back as given. Plan keeps step
// names to [A-Za-z0-9_.:-] and so are kinds and queues, but the page does
// not count on it.
func TestGraphTemplateEscapes(t *testing.T) {
	p := &pages{h: &handler{opts: Options{Now: time.Now}}, tmpl: map[string]*template.Template{}, static: map[string]staticFile{}}
	p.loadStatic()
	tw, err := p.template("workflow")
	if err != nil {
		t.Fatal(err)
	}
	name, queue, kind := `<script>alert(1)</script>`, `q"><img src=x onerror=alert(2)>`, `k&<b>'`
	s := step(name, "dead_letter", 7)
	s.Queue, s.Kind, s.Error = queue, kind, "</title><script>alert(3)</script>"
	child := step(`"><svg onload=alert(4)>`, "waiting", 0, name)
	g := layoutGraph([]*app.WorkflowStep{s, child}, []string{name})
	var buf bytes.Buffer
	if err := tw.ExecuteTemplate(&buf, "graph", g); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, raw := range []string{"<script", "<img", "<b>", "<svg onload", "</title><script"} {
		if strings.Contains(out, raw) {
			t.Errorf("the graph holds %q unescaped:\n%s", raw, out)
		}
	}
	dec := xml.NewDecoder(strings.NewReader(out))
	var texts []string
	var in []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the graph is not well-formed XML: %v\n%s", err, out)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			in = append(in, tok.Name.Local)
			if tok.Name.Local == "a" || tok.Name.Local == "g" {
				for _, a := range tok.Attr {
					if a.Name.Local == "class" && !strings.HasPrefix(a.Value, "wf-node st-") {
						t.Errorf("a box's class is %q", a.Value)
					}
				}
			}
		case xml.EndElement:
			in = in[:len(in)-1]
		case xml.CharData:
			if len(in) > 0 && (in[len(in)-1] == "title" || in[len(in)-1] == "text") {
				texts = append(texts, string(tok))
			}
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{name, "queue " + queue + ", kind " + kind, "error: </title><script>alert(3)</script>", `"><svg onload=alert(4)>: waiting`, name + ` → "><svg onload=alert(4)>`} {
		if !strings.Contains(all, want) {
			t.Errorf("the graph's texts do not read back %q:\n%s", want, all)
		}
	}
}
