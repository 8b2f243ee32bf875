package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

// writeSizes records the size of each write transaction of a store.
type writeSizes struct {
	mu    sync.Mutex
	sizes []int
}

// open opens a store that reports to w, with a join window long enough for
// any test machine.
func (w *writeSizes) open(t *testing.T) *sqlite.Store {
	opts := sqlite.Options{}
	opts.ObserveWrite = func(n int, _ time.Duration) { w.mu.Lock(); w.sizes = append(w.sizes, n); w.mu.Unlock() }
	s := MustOpen(t, opts)
	s.SetJoinFor(time.Minute) // join whatever comes, however slow the test machine
	return s
}

func (w *writeSizes) reset() { w.mu.Lock(); w.sizes = nil; w.mu.Unlock() }

// get returns the sizes seen. The writer reports a transaction after it
// answered its callers, so get waits a little for a first report.
func (w *writeSizes) get() []int {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		got := slices.Clone(w.sizes)
		w.mu.Unlock()
		if len(got) > 0 || time.Now().After(deadline) {
			return got
		}
	}
}

// Requests that arrive while a write transaction runs join it (group
// commit), and one of them failing still fails alone: the transaction runs
// again with a savepoint per request, the late ones included, and only the
// failing request's writes are undone.
func TestLateRequestsJoinAndFailAlone(t *testing.T) {
	var ws writeSizes
	s := ws.open(t)
	ctx := context.Background()
	insert := func(name string) func(exec func(string, ...any) error) error {
		return func(exec func(string, ...any) error) error {
			return exec(`INSERT INTO queues (name) VALUES (?)`, name)
		}
	}
	ws.reset() // the store's own writes at open

	running := make(chan struct{})
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the first request holds its transaction until two more wait
		defer wg.Done()
		runs := 0 // a write's function may run again (here: when the batch reruns with savepoints)
		errs[0] = s.WriteForTest(ctx, func(exec func(string, ...any) error) error {
			if runs++; runs == 1 {
				close(running)
				for deadline := time.Now().Add(10 * time.Second); s.QueuedWrites() < 2 && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
			return insert("first")(exec)
		})
	}()
	<-running
	refused := errors.New("refused")
	wg.Add(2)
	go func() { defer wg.Done(); errs[1] = s.WriteForTest(ctx, insert("late")) }()
	go func() {
		defer wg.Done()
		errs[2] = s.WriteForTest(ctx, func(exec func(string, ...any) error) error {
			if err := exec(`INSERT INTO queues (name) VALUES ('undone')`); err != nil {
				return err
			}
			return refused
		})
	}()
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || !errors.Is(errs[2], refused) {
		t.Fatalf("answers %v, want nil, nil, refused", errs)
	}
	got := ws.get()
	if !slices.Equal(got, []int{3}) {
		t.Fatalf("write transactions of %v requests, want one of 3 (the late two joined)", got)
	}
	qs, err := s.Queues(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"first", "late"}) {
		t.Fatalf("queues %v, want first and late (the refused request's row undone)", names)
	}
}

// Plain submissions that share a transaction also share their INSERT; when
// one of their rows is refused, the transaction runs again with a
// savepoint per request, and only the refused submission fails. The others
// answer the ids of their own rows.
func TestSharedInsertFailsAlone(t *testing.T) {
	var ws writeSizes
	s := ws.open(t)
	ctx := context.Background()
	if err := s.WriteForTest(ctx, func(exec func(string, ...any) error) error {
		return exec(`CREATE TRIGGER test_poison BEFORE INSERT ON jobs WHEN NEW.kind = 'poison'
			BEGIN SELECT RAISE(ABORT, 'poisoned'); END`)
	}); err != nil {
		t.Fatal(err)
	}
	ws.get() // the trigger's write reports after it answered
	ws.reset()

	kinds := []string{"a", "b", "poison", "c"}
	running := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // holds its transaction until the four submissions wait
		defer wg.Done()
		runs := 0
		s.WriteForTest(ctx, func(exec func(string, ...any) error) error {
			if runs++; runs == 1 {
				close(running)
				for deadline := time.Now().Add(10 * time.Second); s.QueuedWrites() < len(kinds) && time.Now().Before(deadline); {
					time.Sleep(time.Millisecond)
				}
			}
			return nil
		})
	}()
	<-running
	ids := make([]int64, len(kinds))
	errs := make([]error, len(kinds))
	for i, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := app.Submit(ctx, s, app.SubmitRequest{Jobs: []app.NewJob{{Queue: "q", Kind: k, MaxAttempts: 1,
				Payload: json.RawMessage(`{"kind":"` + k + `"}`)}}})
			errs[i] = err
			if err == nil {
				ids[i] = out[0].Job.ID
			}
		}()
	}
	wg.Wait()
	got := ws.get()
	if !slices.Equal(got, []int{5}) {
		t.Fatalf("write transactions of %v requests, want one of 5", got)
	}
	for i, k := range kinds {
		if k == "poison" {
			if errs[i] == nil || !strings.Contains(errs[i].Error(), "poisoned") {
				t.Errorf("poisoned submission: %v, want its row refused", errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("submission of %s: %v", k, errs[i])
		}
		job, _, err := s.Lookup(ctx, ids[i])
		if err != nil || job == nil || job.Kind != k || string(job.Payload) != `{"kind":"`+k+`"}` {
			t.Fatalf("id %d answered for %s holds %+v (%v)", ids[i], k, job, err)
		}
	}
	if n, err := s.CountJobs(ctx, app.JobFilter{}); err != nil || n != 3 {
		t.Fatalf("%d jobs stored (%v), want 3", n, err)
	}
}
