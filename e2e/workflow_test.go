package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Issue 24's first "done when", from outside: one request submits the
// diamond (A; B and C after A; D after B and C) to the real binary on
// SQLite; `queue work` runs a shell command that reads QUEUE_PARENTS_FILE;
// D's run sees the results of B and C; the workflow ends done.
func TestWorkflowDiamondWithQueueWork(t *testing.T) {
	p := start(t, t.TempDir(), "")
	step := func(name, kind string, deps ...string) map[string]any {
		s := map[string]any{"step": name, "queue": "wf", "kind": kind, "payload": map[string]string{"name": name}}
		if len(deps) > 0 {
			s["depends_on"] = deps
		}
		return s
	}
	st, wf, err := call("POST", p.url+"/api/workflows", map[string]any{"name": "etl", "steps": []any{
		step("A", "download"), step("B", "transform", "A"), step("C", "transform", "A"), step("D", "load", "B", "C")}})
	if err != nil || st != 201 {
		t.Fatalf("POST /api/workflows: %d %v %v", st, wf, err)
	}
	wfID := id(wf)
	// Each run prints what it saw: its step, workflow, payload, the parents
	// file's path and its content.
	script := `payload=$(cat)
parents=null
if [ -n "$QUEUE_PARENTS_FILE" ]; then parents=$(cat "$QUEUE_PARENTS_FILE") || exit 1; fi
printf '{"step":"%s","workflow":"%s","file":"%s","payload":%s,"parents":%s}' "$QUEUE_STEP" "$QUEUE_WORKFLOW_ID" "$QUEUE_PARENTS_FILE" "$payload" "$parents"`
	startWork(t, p.url, t.TempDir(), script, "--queue", "wf", "--concurrency", "2")

	deadline := time.Now().Add(30 * time.Second)
	var view map[string]any
	for {
		st, view, err = call("GET", fmt.Sprintf("%s/api/workflows/%d", p.url, wfID), nil)
		if err != nil || st != 200 {
			t.Fatalf("GET workflow %d: %d %v %v", wfID, st, view, err)
		}
		if view["status"] == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workflow not done within 30s: %s", jsonOf(view))
		}
		time.Sleep(50 * time.Millisecond)
	}
	jobs := map[string]int64{}
	for _, s := range view["steps"].([]any) {
		s := s.(map[string]any)
		if s["status"] != "done" {
			t.Fatalf("step %v: %v, want done", s["step"], s["status"])
		}
		jobs[s["step"].(string)] = int64(s["job_id"].(float64))
	}

	// D's result is what its command saw.
	var d struct {
		Step, Workflow, File string
		Payload              map[string]string
		Parents              map[string]struct {
			Status string
			JobID  int64 `json:"job_id"`
			Result struct {
				Step    string
				Parents map[string]struct{ Status string }
			}
		}
	}
	job := getJob(t, p.url, jobs["D"], "")
	raw, _ := json.Marshal(job["result"])
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("D's result %s: %v", raw, err)
	}
	if d.Step != "D" || d.Workflow != fmt.Sprint(wfID) || d.Payload["name"] != "D" || len(d.Parents) != 2 {
		t.Fatalf("D's command saw %s", raw)
	}
	for _, n := range []string{"B", "C"} {
		pr := d.Parents[n]
		if pr.Status != "done" || pr.JobID != jobs[n] || pr.Result.Step != n || pr.Result.Parents["A"].Status != "done" {
			t.Fatalf("D's parent %s: %+v, want done by job %d with %s's result (which saw A done)", n, pr, jobs[n], n)
		}
	}
	if _, err := os.Stat(d.File); d.File == "" || !os.IsNotExist(err) {
		t.Fatalf("D's parents file %q: %v; want it removed after the run", d.File, err)
	}
	a := getJob(t, p.url, jobs["A"], "")
	if r, _ := json.Marshal(a["result"]); !strings.Contains(string(r), `"parents":null`) || !strings.Contains(string(r), `"file":""`) {
		t.Fatalf("A's command saw %s; want no parents file", r)
	}

	// The command line shows it too.
	out, err := exec.Command(bin, "workflow", "get", fmt.Sprint(wfID), "--server", p.url).CombinedOutput()
	if err != nil || !regexp.MustCompile(`(?m)^status +done$`).Match(out) || !strings.Contains(string(out), "4 (4 done)") {
		t.Fatalf("queue workflow get %d: %v\n%s", wfID, err, out)
	}
}
