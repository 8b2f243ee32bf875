package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/queuehq/queue/app"
)

// The workflow page draws a workflow's steps as a graph: boxes in layers,
// left to right, joined by arrows from each parent to its child. The
// geometry is computed here and the "graph" template of workflow.html
// writes it as SVG, so every text (step names, queues, kinds) goes through
// html/template's escaping; the numbers and the class names are ours.

// Sizes of the graph, in SVG user units (CSS pixels at natural size).
const (
	// graphMaxSteps is the largest workflow drawn: past it the boxes of a
	// fan-out would make a picture no one can read, and the page would
	// weigh megabytes. The steps table covers every workflow.
	graphMaxSteps = 300
	graphPad      = 16
	graphBoxW     = 176
	graphBoxH     = 44
	graphColGap   = 72
	graphRowGap   = 14
	// graphLabelMax is how many characters of a step name fit in a box
	// (12px monospace); the full name is in the box's title.
	graphLabelMax = 21
)

// graph is a laid-out workflow.
type graph struct {
	W, H       int
	BoxW, BoxH int
	Layers     int
	Nodes      []graphNode
	Edges      []graphEdge
}

// graphNode is one step's box.
type graphNode struct {
	Name      string
	Label     string // Name, clipped to fit the box
	State     string // a stepStates entry, or "unknown"
	StateText string
	Class     string // "wf-node st-<state>", and "wf-critical" on the critical path
	Layer     int    // 0 for a step without dependencies, else 1 + its deepest parent's
	Row       int    // its place in its layer, from the top
	X, Y      int    // top left corner
	TextX     int
	NameY     int
	StateY    int
	Href      string // its job's page (stepHref), once released
	// Title is the tooltip (state, queue, kind, job, dependencies); a
	// screen reader names a box's link by it too.
	Title string
}

// graphEdge is one dependency: an arrow from Parent's box to Child's.
type graphEdge struct {
	Parent, Child string
	X1, Y1        int // the parent's right side, middle
	X2, Y2        int // the child's left side, middle (the arrow's tip)
	// Lanes are the heights at which an edge that skips layers crosses
	// each layer between its ends: in a gap between boxes, never through one.
	Lanes []int
	Path  string
	Class string // "wf-edge", with "wf-edge-continue" (dashed) and "wf-edge-critical"
}

// stepStates are the states a step is shown in (app.WorkflowStep.State),
// in the order a step goes through them; each has a colour in app.css.
var stepStates = []string{"waiting", "queued", "processing", "done", "dead_letter", "cancelled"}

// stateText is a state as words: "dead letter".
func stateText(s string) string { return strings.ReplaceAll(s, "_", " ") }

// knownState is s when app.css has a colour for it, else "unknown", so a
// class name never carries anything but ours.
func knownState(s string) string {
	if slices.Contains(stepStates, s) {
		return s
	}
	return "unknown"
}

// layoutGraph lays out steps (with Status set to the state shown, as
// Service.GetWorkflow gives them), marking the steps and edges of
// critical (a chain of step names, first to last). It returns nil for no
// steps or more than graphMaxSteps.
func layoutGraph(steps []*app.WorkflowStep, critical []string) *graph {
	if len(steps) == 0 || len(steps) > graphMaxSteps {
		return nil
	}
	index := make(map[string]int, len(steps))
	for i, s := range steps {
		index[s.Name] = i
	}
	layer := stepLayers(steps, index)

	g := &graph{BoxW: graphBoxW, BoxH: graphBoxH}
	var byLayer [][]int
	for i := range steps {
		for layer[i] >= len(byLayer) {
			byLayer = append(byLayer, nil)
		}
		byLayer[layer[i]] = append(byLayer[layer[i]], i)
	}
	g.Layers = len(byLayer)
	rows := 0
	for _, l := range byLayer {
		rows = max(rows, len(l))
	}
	g.W = 2*graphPad + g.Layers*graphBoxW + (g.Layers-1)*graphColGap
	g.H = 2*graphPad + rows*graphBoxH + (rows-1)*graphRowGap

	onPath := make(map[string]bool, len(critical))
	pathEdge := make(map[[2]string]bool, len(critical))
	for i, name := range critical {
		onPath[name] = true
		if i > 0 {
			pathEdge[[2]string{critical[i-1], name}] = true
		}
	}

	// Each layer below the first is ordered by where its parents sit (the
	// mean of their middles), which uncrosses most edges of a fan-out and
	// fan-in; ties keep the order the steps were given in.
	g.Nodes = make([]graphNode, len(steps))
	mid := make([]float64, len(steps))
	tops := make([][]int, len(byLayer)) // each layer's boxes' tops, in row order
	for l, members := range byLayer {
		if l > 0 {
			key := make(map[int]float64, len(members))
			for _, i := range members {
				sum, n := 0.0, 0
				for _, d := range steps[i].DependsOn {
					if p, ok := index[d.Step]; ok {
						sum += mid[p]
						n++
					}
				}
				if n > 0 {
					key[i] = sum / float64(n)
				}
			}
			slices.SortStableFunc(members, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
		}
		top := graphPad + (rows-len(members))*(graphBoxH+graphRowGap)/2
		for r, i := range members {
			s := steps[i]
			state := knownState(string(s.Status))
			n := graphNode{Name: s.Name, Label: s.Name, State: state, StateText: stateText(state),
				Class: "wf-node st-" + state, Layer: l, Row: r,
				X: graphPad + l*(graphBoxW+graphColGap), Y: top + r*(graphBoxH+graphRowGap)}
			if len(s.Name) > graphLabelMax {
				n.Label = app.TruncateString(s.Name, graphLabelMax-1) + "…"
			}
			n.TextX, n.NameY, n.StateY = n.X+10, n.Y+18, n.Y+35
			if onPath[s.Name] {
				n.Class += " wf-critical"
			}
			if s.JobID != 0 {
				n.Href = stepHref(s)
			}
			n.Title = stepTitle(s, n.StateText)
			g.Nodes[i] = n
			mid[i] = float64(n.Y) + graphBoxH/2
			tops[l] = append(tops[l], n.Y)
		}
	}

	for i, s := range steps {
		child := g.Nodes[i]
		for _, d := range s.DependsOn {
			p, ok := index[d.Step]
			if !ok {
				continue
			}
			parent := g.Nodes[p]
			e := graphEdge{Parent: parent.Name, Child: child.Name,
				X1: parent.X + graphBoxW, Y1: parent.Y + graphBoxH/2, X2: child.X, Y2: child.Y + graphBoxH/2, Class: "wf-edge"}
			for l := parent.Layer + 1; l < child.Layer; l++ {
				at := float64(l-parent.Layer) / float64(child.Layer-parent.Layer)
				e.Lanes = append(e.Lanes, lane(tops[l], e.Y1+int(at*float64(e.Y2-e.Y1))))
			}
			e.Path = edgePath(e, parent.Layer)
			if d.OnFailure == app.OnFailureContinue {
				e.Class += " wf-edge-continue"
			}
			if pathEdge[[2]string{parent.Name, child.Name}] {
				e.Class += " wf-edge-critical"
			}
			g.Edges = append(g.Edges, e)
		}
	}
	return g
}

// lane is the height nearest y at which a line crosses a layer whose
// boxes start at tops without touching one: above the first box, or
// halfway down a gap below one.
func lane(tops []int, y int) int {
	best := tops[0] - graphRowGap/2
	for _, t := range tops {
		if c := t + graphBoxH + graphRowGap/2; abs(c-y) < abs(best-y) {
			best = c
		}
	}
	return best
}

func abs(n int) int { return max(n, -n) }

// edgePath is e as SVG path data: cubic curves that leave and enter each
// point level, so the arrowhead (oriented along the path's end) points
// straight at the child's box, with a straight run across each layer the
// edge skips, at its lane. from is the parent's layer.
func edgePath(e graphEdge, from int) string {
	type pt struct{ x, y int }
	pts := []pt{{e.X1, e.Y1}}
	for i, y := range e.Lanes {
		x := graphPad + (from+1+i)*(graphBoxW+graphColGap)
		pts = append(pts, pt{x, y}, pt{x + graphBoxW, y})
	}
	pts = append(pts, pt{e.X2, e.Y2})
	var b strings.Builder
	fmt.Fprintf(&b, "M%d %d", e.X1, e.Y1)
	for i := 1; i < len(pts); i++ {
		a, z := pts[i-1], pts[i]
		if i%2 == 0 { // across a skipped layer
			fmt.Fprintf(&b, "L%d %d", z.x, z.y)
			continue
		}
		c := (z.x - a.x) / 2
		fmt.Fprintf(&b, "C%d %d %d %d %d %d", a.x+c, a.y, z.x-c, z.y, z.x, z.y)
	}
	return b.String()
}

// stepHref is the page of s's job: its dead-letter row's, where the
// replay that unblocks the workflow is, once it dead-lettered.
func stepHref(s *app.WorkflowStep) string {
	if s.Status == app.StepDead {
		return "/dlq/" + strconv.FormatInt(s.JobID, 10)
	}
	return "/jobs/" + strconv.FormatInt(s.JobID, 10)
}

// stepLayers is each step's layer: 0 without dependencies, else one more
// than its deepest parent's. Plan refuses cycles; were one stored anyway,
// the edge that closes it is ignored rather than looped on.
func stepLayers(steps []*app.WorkflowStep, index map[string]int) []int {
	const unseen, open = -1, -2
	layer := make([]int, len(steps))
	for i := range layer {
		layer[i] = unseen
	}
	var visit func(i int) int
	visit = func(i int) int {
		switch layer[i] {
		case open:
			return -1
		case unseen:
		default:
			return layer[i]
		}
		layer[i] = open
		l := 0
		for _, d := range steps[i].DependsOn {
			if p, ok := index[d.Step]; ok {
				l = max(l, visit(p)+1)
			}
		}
		layer[i] = l
		return l
	}
	for i := range steps {
		visit(i)
	}
	return layer
}

// stepTitle is a box's tooltip: everything the box has no room for.
func stepTitle(s *app.WorkflowStep, state string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\nqueue %s, kind %s", s.Name, state, s.Queue, s.Kind)
	if s.JobID != 0 {
		fmt.Fprintf(&b, "\njob #%d", s.JobID)
		if s.Attempts > 0 {
			fmt.Fprintf(&b, ", %s", plural(s.Attempts, "attempt", "attempts"))
		}
	}
	if len(s.DependsOn) > 0 {
		names := make([]string, len(s.DependsOn))
		for i, d := range s.DependsOn {
			names[i] = d.Step
			if d.OnFailure == app.OnFailureContinue {
				names[i] += " (even if it fails)"
			}
		}
		fmt.Fprintf(&b, "\nafter %s", strings.Join(names, ", "))
		if s.Waiting > 0 {
			fmt.Fprintf(&b, "; waiting on %d", s.Waiting)
		}
	}
	if s.Error != "" {
		fmt.Fprintf(&b, "\nerror: %s", app.TruncateString(firstLine(s.Error), 200))
	}
	return b.String()
}
