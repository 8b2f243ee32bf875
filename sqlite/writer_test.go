package sqlite_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queuehq/queue/sqlite"
)

// Requests that arrive while a write transaction runs join it (group
// commit), and one of them failing still fails alone: the transaction runs
// again with a savepoint per request, the late ones included, and only the
// failing request's writes are undone.
func TestLateRequestsJoinAndFailAlone(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	opts := sqlite.Options{}
	opts.ObserveWrite = func(n int, _ time.Duration) { mu.Lock(); sizes = append(sizes, n); mu.Unlock() }
	s := MustOpen(t, opts)
	s.SetJoinFor(time.Minute) // join whatever comes, however slow the test machine
	ctx := context.Background()
	insert := func(name string) func(exec func(string, ...any) error) error {
		return func(exec func(string, ...any) error) error {
			return exec(`INSERT INTO queues (name) VALUES (?)`, name)
		}
	}
	mu.Lock()
	sizes = nil // the store's own writes at open
	mu.Unlock()

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
	mu.Lock()
	got := slices.Clone(sizes)
	mu.Unlock()
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
