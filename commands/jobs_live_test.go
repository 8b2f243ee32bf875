package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// liveServer is a server over a memory store holding three queued jobs
// of customer 42 and one of customer 7, in queue q.
func liveServer(t *testing.T) (string, *app.Service) {
	t.Helper()
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	for _, p := range []string{`{"customer":42}`, `{"customer":42}`, `{"customer":"42"}`, `{"customer":7}`} {
		if _, err := svc.Submit(context.Background(), []app.SubmitInput{{Queue: "q", Kind: "k", Payload: json.RawMessage(p)}}); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
	t.Cleanup(srv.Close)
	return srv.URL, svc
}

// `queue jobs list --payload` finds, `queue jobs cancel --payload` counts
// with --dry-run, refuses without a terminal or --yes, and cancels with it.
func TestJobsLiveFiltersAndBulkCancel(t *testing.T) {
	url, svc := liveServer(t)
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(t.Context(), append(append([]string{"queue"}, args...), "--server", url), null, &out, &errb, Build{})
		return code, out.String(), errb.String()
	}
	queued := func() int {
		n, _ := svc.Store.CountJobs(t.Context(), app.JobFilter{Status: "queued"})
		return n
	}
	if code, out, errs := run("jobs", "list", "--payload", "customer=42", "--json"); code != 0 || strings.Count(out, `"customer"`) != 3 {
		t.Fatalf("jobs list --payload customer=42: exit %d, %s %s; want the three jobs", code, out, errs)
	}
	if code, _, errs := run("jobs", "list", "--payload", "customer"); code != 2 || !strings.Contains(errs, "--payload takes PATH=VALUE") {
		t.Fatalf("--payload without =: exit %d, %s", code, errs)
	}
	if code, _, errs := run("jobs", "list", "--created-after", "soon"); code == 0 || !strings.Contains(errs, "created_after") {
		t.Fatalf("--created-after soon: exit %d, %s; want the server's error naming created_after", code, errs)
	}
	if code, out, errs := run("jobs", "cancel", "--payload", "customer=42", "--dry-run"); code != 0 || !strings.Contains(out, "would have cancelled 3") || queued() != 4 {
		t.Fatalf("cancel --dry-run: exit %d, %q %q, %d queued", code, out, errs, queued())
	}
	if code, _, errs := run("jobs", "cancel", "--payload", "customer=42"); code != 2 || !strings.Contains(errs, "--yes") || queued() != 4 {
		t.Fatalf("cancel without a terminal: exit %d, %q, %d queued; want exit 2 naming --yes, nothing changed", code, errs, queued())
	}
	if code, _, errs := run("jobs", "cancel", "--status", "queued"); code != 2 || !strings.Contains(errs, "or --all") {
		t.Fatalf("cancel by status alone: exit %d, %q", code, errs)
	}
	if code, out, errs := run("jobs", "cancel", "--payload", "customer=42", "--yes"); code != 0 || !strings.Contains(out, "cancelled 3") || queued() != 1 {
		t.Fatalf("cancel --yes: exit %d, %q %q, %d queued", code, out, errs, queued())
	}
	if code, out, errs := run("jobs", "prioritize", "--queue", "q", "--priority", "5", "--yes", "--json"); code != 0 || !strings.Contains(out, `"changed": 1`) {
		t.Fatalf("prioritize: exit %d, %q %q", code, out, errs)
	}
	if code, _, errs := run("jobs", "reschedule", "--queue", "q", "--yes"); code != 2 || !strings.Contains(errs, "--delay or --run-at") {
		t.Fatalf("reschedule without a time: exit %d, %q", code, errs)
	}
	// One job by id, as before.
	left, _ := svc.Store.List(t.Context(), app.JobFilter{Status: "queued"})
	if code, out, errs := run("jobs", "cancel", strconv.FormatInt(left[0].ID, 10)); code != 0 || !strings.Contains(out, "cancelled") || queued() != 0 {
		t.Fatalf("cancel ID: exit %d %q %q", code, out, errs)
	}
	if code, _, errs := run("jobs", "retry", "7"); code != 2 || !strings.Contains(errs, "takes no arguments") {
		t.Fatalf("retry ID: exit %d %q", code, errs)
	}
	a, _ := svc.Audit(t.Context(), app.AuditFilter{Action: "jobs.cancel"})
	if len(a) != 1 || a[0].Count != 3 {
		t.Fatalf("audit: %+v, want one jobs.cancel of 3", a)
	}
}
