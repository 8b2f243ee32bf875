package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// The diamond over HTTP with the Go package: SubmitWorkflow, a Worker
// whose D handler reads the results of B and C in job.Parents,
// GetWorkflow and ListWorkflows; CancelWorkflow and the errors.
func TestWorkflowsOverHTTP(t *testing.T) {
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	bus := app.NewBus()
	svc := app.NewService(memory.New(app.StoreOptions{Bus: bus}), nil, nil, bus, log)
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: log}))
	t.Cleanup(srv.Close)
	t.Cleanup(svc.Stop)
	c := client.New(srv.URL)
	ctx := t.Context()

	step := func(name, kind string, deps ...string) client.StepInput {
		s := client.StepInput{SubmitInput: client.SubmitInput{Queue: "etl", Kind: kind}, Step: name}
		for _, d := range deps {
			s.DependsOn = append(s.DependsOn, client.Dependency{Step: d})
		}
		return s
	}
	wf, err := c.SubmitWorkflow(ctx, client.WorkflowInput{Name: "etl", Tags: []string{"nightly"}, Steps: []client.StepInput{
		step("download", "download"), step("clean", "transform", "download"), step("enrich", "transform", "download"),
		step("load", "load", "clean", "enrich")}})
	if err != nil {
		t.Fatal(err)
	}
	if wf.Workflow == nil || wf.ID == 0 || wf.Status != app.WorkflowRunning || len(wf.Steps) != 4 || wf.Steps[0].JobID == 0 || wf.Steps[3].Status != app.StepWaiting {
		t.Fatalf("SubmitWorkflow: %+v", wf)
	}

	var mu sync.Mutex
	var loadSaw []client.Parent
	var loadJob client.Job
	w := client.NewWorker(c, "etl", client.WithPollWait(time.Second))
	w.Handle("download", func(ctx context.Context, job *client.Job) (any, error) {
		return map[string]int{"rows": 10}, nil
	})
	w.Handle("transform", func(ctx context.Context, job *client.Job) (any, error) {
		var rows struct{ Rows int }
		if len(job.Parents) != 1 || json.Unmarshal(job.Parents[0].Result, &rows) != nil {
			return nil, client.Permanent(errors.New("no download result"))
		}
		return map[string]any{"step": job.Step, "rows": rows.Rows - 1}, nil
	})
	w.Handle("load", func(ctx context.Context, job *client.Job) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		loadSaw, loadJob = job.Parents, *job
		return "loaded", nil
	})
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(5 * time.Second)

	deadline := time.Now().Add(10 * time.Second)
	for wf.Status != app.WorkflowDone {
		if time.Now().After(deadline) {
			t.Fatalf("workflow not done in 10s: %+v", wf)
		}
		time.Sleep(20 * time.Millisecond)
		if wf, err = c.GetWorkflow(ctx, wf.ID); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	if loadJob.WorkflowID != wf.ID || loadJob.Step != "load" || len(loadSaw) != 2 {
		t.Fatalf("load's job: workflow %d step %q parents %+v", loadJob.WorkflowID, loadJob.Step, loadSaw)
	}
	for _, p := range loadSaw {
		var r struct {
			Step string
			Rows int
		}
		if p.Status != app.StepDone || p.JobID == 0 || json.Unmarshal(p.Result, &r) != nil || r.Step != p.Step || r.Rows != 9 {
			t.Fatalf("load's parent %+v, want done with its transform's result", p)
		}
	}
	mu.Unlock()
	if wf.DoneCount != 4 || len(wf.CriticalPath) != 3 || wf.CriticalPath[0] != "download" || wf.CriticalPath[2] != "load" {
		t.Fatalf("GetWorkflow at the end: %+v", wf)
	}
	for _, s := range wf.Steps {
		if s.Status != app.StepDone || s.JobID == 0 || s.StartedAt == nil || s.Attempts != 1 {
			t.Fatalf("step %+v, want done after one attempt", s)
		}
	}

	// Cancel, list, and the errors as the sentinels.
	other, err := c.SubmitWorkflow(ctx, client.WorkflowInput{Name: "later", Steps: []client.StepInput{
		{SubmitInput: client.SubmitInput{Queue: "elsewhere", Kind: "k", Delay: ptr(app.Duration(time.Hour))}, Step: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	cancelled, err := c.CancelWorkflow(ctx, other.ID)
	if err != nil || cancelled.Status != app.WorkflowCancelled || cancelled.Steps[0].Status != app.StepCancelled {
		t.Fatalf("CancelWorkflow: %+v, %v", cancelled, err)
	}
	if _, err := c.CancelWorkflow(ctx, other.ID); !errors.Is(err, client.ErrIllegalTransition) {
		t.Fatalf("CancelWorkflow of a cancelled workflow: %v, want ErrIllegalTransition", err)
	}
	if _, err := c.GetWorkflow(ctx, 999); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("GetWorkflow(999): %v, want ErrNotFound", err)
	}
	page, err := c.ListWorkflows(ctx, client.WorkflowListOptions{Limit: 1})
	if err != nil || len(page.Workflows) != 1 || page.Workflows[0].ID != other.ID || page.NextCursor == "" {
		t.Fatalf("ListWorkflows(limit 1): %+v, %v", page, err)
	}
	page, err = c.ListWorkflows(ctx, client.WorkflowListOptions{Cursor: page.NextCursor})
	if err != nil || len(page.Workflows) != 1 || page.Workflows[0].ID != wf.ID || page.Workflows[0].Tags[0] != "nightly" {
		t.Fatalf("ListWorkflows' second page: %+v, %v", page, err)
	}
	if page, err := c.ListWorkflows(ctx, client.WorkflowListOptions{Status: "done"}); err != nil || len(page.Workflows) != 1 {
		t.Fatalf("ListWorkflows(done): %+v, %v", page, err)
	}
	_, err = c.SubmitWorkflow(ctx, client.WorkflowInput{Name: "loop", Steps: []client.StepInput{step("a", "k", "b"), step("b", "k", "a")}})
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 400 || ce.Field != "steps" {
		t.Fatalf("SubmitWorkflow of a cycle: %v, want a 400 naming steps", err)
	}
}

func ptr[T any](v T) *T { return &v }
