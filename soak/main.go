// Command soak runs queue under load and chaos for minutes and checks that
// nothing acknowledged is lost: producers submit to three queues worked by
// built-in command workers (inside serve), `queue work` processes and a Go
// worker; meanwhile it kill -9s workers and the server, cancels jobs and
// replays the dead-letter queue. At the end it lets the work drain and
// prints what happened; it exits 1 if any acknowledged job is lost.
//
//	go run ./soak --bin ./queue --duration 10m     (make soak)
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/worker"
)

func main() {
	bin := flag.String("bin", "./queue", "the queue binary")
	duration := flag.Duration("duration", 2*time.Minute, "how long the chaos lasts (then work drains, up to 2m more)")
	producers := flag.Int("producers", 4, "concurrent producers")
	rate := flag.Int("rate", 200, "submissions per second, in total")
	keep := flag.Bool("keep", false, "keep the temporary directory")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin2, err := filepath.Abs(*bin)
	if err != nil {
		fail(err)
	}
	s := &soak{bin: bin2, producers: *producers, rate: *rate}
	if err := s.run(ctx, *duration, *keep); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "soak:", err)
	os.Exit(1)
}

type soak struct {
	bin       string
	producers int
	rate      int
	dir       string
	addr      string
	url       string
	execLog   string
	cl        *client.Client

	mu        sync.Mutex
	lastID    int64
	server    *exec.Cmd
	workers   []*exec.Cmd
	acked     map[int64]string // job id -> queue
	cancelled atomic.Int64
	replayed  atomic.Int64
	kills     map[string]int
	goExec    map[int64]int
}

var queues = []string{"builtin", "remote", "go"}

// The job script: records the execution, then succeeds (mostly), fails
// (retry), fails permanently (exit 65), or is slow.
const script = `read -r payload
echo "$QUEUE_JOB_ID" >> "$EXEC_LOG"
r=$(( QUEUE_JOB_ID % 50 ))
if [ "$r" = 7 ] && [ "$QUEUE_ATTEMPT" -lt 3 ]; then echo "flaky" >&2; exit 1; fi
if [ "$r" = 13 ]; then echo "bad input" >&2; exit 65; fi
if [ "$r" = 21 ]; then sleep 0.3; fi
echo '{"ok":true}'`

func (s *soak) run(ctx context.Context, d time.Duration, keep bool) error {
	dir, err := os.MkdirTemp("", "queue-soak")
	if err != nil {
		return err
	}
	s.dir = dir
	if !keep {
		defer os.RemoveAll(dir)
	}
	s.execLog = filepath.Join(dir, "executions.log")
	s.acked = map[int64]string{}
	s.kills = map[string]int{}
	s.goExec = map[int64]int{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.addr = ln.Addr().String()
	ln.Close()
	s.url = "http://" + s.addr
	s.cl = client.New(s.url)
	cfg := fmt.Sprintf(`
[defaults]
timeout = "3s"
max_attempts = 5
backoff_base = "200ms"
backoff_max = "2s"

[[workers]]
queue = "builtin"
command = ["sh", "-c", %q]
concurrency = 4
env = { EXEC_LOG = %q }
`, script, s.execLog)
	if err := os.WriteFile(filepath.Join(dir, "queue.toml"), []byte(cfg), 0o600); err != nil {
		return err
	}
	fmt.Printf("soak: %s for %s in %s\n", s.url, d, dir)
	if err := s.startServer(ctx); err != nil {
		return err
	}
	defer s.stopAll() // also when the run fails half way
	for i := 0; i < 2; i++ {
		s.startWorker(i)
	}
	goCtx, stopGo := context.WithCancel(ctx)
	goDone := s.goWorker(goCtx)

	chaosCtx, stopChaos := context.WithTimeout(ctx, d)
	var wg sync.WaitGroup
	for p := 0; p < s.producers; p++ {
		wg.Add(1)
		go func() { defer wg.Done(); s.produce(chaosCtx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.chaos(chaosCtx) }()
	s.progress(chaosCtx)
	wg.Wait()
	stopChaos()

	fmt.Println("soak: chaos over; letting the work drain")
	s.mu.Lock()
	if s.server.ProcessState != nil || s.server.Process.Signal(syscall.Signal(0)) != nil {
		s.mu.Unlock()
		s.startServer(ctx)
		s.mu.Lock()
	}
	for i, w := range s.workers {
		if w.ProcessState != nil {
			s.mu.Unlock()
			s.startWorker(i)
			s.mu.Lock()
		}
	}
	s.mu.Unlock()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		st, err := s.cl.Stats(ctx)
		if err == nil && st.Total.Queued+st.Total.Scheduled+st.Total.Processing == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopGo()
	<-goDone
	return s.report(ctx) // the deferred stopAll ends the processes
}

// stopAll stops the server and the workers it started (SIGTERM, then kill).
func (s *soak) stopAll() {
	s.mu.Lock()
	procs := append([]*exec.Cmd{s.server}, s.workers...)
	s.mu.Unlock()
	for _, p := range procs {
		if p != nil && p.Process != nil {
			p.Process.Signal(syscall.SIGTERM)
		}
	}
	time.Sleep(3 * time.Second)
	for _, p := range procs {
		if p != nil && p.Process != nil {
			p.Process.Kill()
		}
	}
}

func (s *soak) startServer(ctx context.Context) error {
	cmd := exec.Command(s.bin, "serve", "--addr", s.addr, "--db", filepath.Join(s.dir, "queue.db"),
		"--config", filepath.Join(s.dir, "queue.toml"), "--log-format", "json", "--grace", "2s")
	log, _ := os.OpenFile(filepath.Join(s.dir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "EXEC_LOG="+s.execLog)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	s.mu.Lock()
	s.server = cmd
	s.mu.Unlock()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if s.cl.Ready(ctx) == nil {
			return nil
		}
	}
	return errors.New("server not ready in 15s (see serve.log)")
}

func (s *soak) startWorker(i int) {
	cmd := exec.Command(s.bin, "work", "--server", s.url, "--queue", "remote", "--concurrency", "4",
		"--grace", "2s", "--log-format", "json", "--", "sh", "-c", script)
	log, _ := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("work-%d.log", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "EXEC_LOG="+s.execLog)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "soak: start worker:", err)
		return
	}
	go cmd.Wait()
	s.mu.Lock()
	for len(s.workers) <= i {
		s.workers = append(s.workers, nil)
	}
	s.workers[i] = cmd
	s.mu.Unlock()
}

// goWorker runs a Go worker over HTTP on queue "go".
func (s *soak) goWorker(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	pool := &worker.Pool{Backend: s.cl, Queue: "go", Concurrency: 4, Grace: 2 * time.Second, Log: zerolog.Nop(),
		Handler: func(ctx context.Context, job *app.Job) (any, error) {
			s.mu.Lock()
			s.goExec[job.ID]++
			s.mu.Unlock()
			switch job.ID % 50 {
			case 7:
				if job.Attempts < 3 {
					return nil, errors.New("flaky")
				}
			case 13:
				return nil, worker.Permanent(errors.New("bad input"))
			}
			return map[string]bool{"ok": true}, nil
		}}
	go func() {
		defer close(done)
		pool.Run(ctx)
	}()
	return done
}

func (s *soak) produce(ctx context.Context) {
	every := time.Duration(float64(time.Second) * float64(s.producers) / float64(s.rate))
	t := time.NewTicker(every)
	defer t.Stop()
	for ctx.Err() == nil {
		q := queues[rand.IntN(len(queues))]
		res, err := s.cl.Submit(ctx, app.SubmitInput{Queue: q, Kind: "soak", Payload: []byte(`{"n":1}`)})
		if err == nil {
			s.mu.Lock()
			s.acked[res.Job.ID] = q
			s.lastID = max(s.lastID, res.Job.ID)
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// chaos kills workers and the server, cancels jobs and replays the DLQ.
func (s *soak) chaos(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(500+rand.IntN(2500)) * time.Millisecond):
		}
		switch n := rand.IntN(10); {
		case n < 3: // kill -9 a queue work process and start another
			i := rand.IntN(2)
			s.mu.Lock()
			w := s.workers[i]
			s.kills["worker"]++
			s.mu.Unlock()
			w.Process.Signal(syscall.SIGKILL)
			time.Sleep(200 * time.Millisecond)
			s.startWorker(i)
		case n < 5: // kill -9 the server and start it again
			s.mu.Lock()
			srv := s.server
			s.kills["server"]++
			s.mu.Unlock()
			srv.Process.Signal(syscall.SIGKILL)
			time.Sleep(100 * time.Millisecond)
			if err := s.startServer(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "soak: restart server:", err)
			}
		case n < 7: // cancel the newest job (likely still queued or running)
			s.mu.Lock()
			id := s.lastID
			s.mu.Unlock()
			if id > 0 {
				if _, err := s.cl.Cancel(ctx, id); err == nil {
					s.cancelled.Add(1)
				}
			}
		default: // replay part of the DLQ
			q := queues[rand.IntN(len(queues))]
			if res, err := s.cl.Bulk(ctx, app.BulkReplay, app.BulkInput{Queue: q, Rate: 50}); err == nil {
				s.replayed.Add(int64(res.Count))
			}
		}
	}
}

func (s *soak) progress(ctx context.Context) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.mu.Lock()
			n, kills := len(s.acked), fmt.Sprint(s.kills)
			s.mu.Unlock()
			fmt.Printf("soak: %s: %d submitted, kills %s\n", time.Since(start).Round(time.Second), n, kills)
		}
	}
}

func (s *soak) report(ctx context.Context) error {
	status := map[string]int{}
	lost := []int64{}
	s.mu.Lock()
	acked := make(map[int64]string, len(s.acked))
	for k, v := range s.acked {
		acked[k] = v
	}
	s.mu.Unlock()
	for id := range acked {
		job, err := s.cl.Get(ctx, id, client.GetOptions{})
		var ce *client.Error
		switch {
		case errors.As(err, &ce) && ce.Status == http.StatusNotFound:
			lost = append(lost, id)
		case err != nil:
			return fmt.Errorf("read job %d: %w", id, err)
		default:
			status[string(job.Status)]++
		}
	}
	// Executions: the command workers' log, and the Go worker's counts.
	execs := map[int64]int{}
	if f, err := os.Open(s.execLog); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if id, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
				execs[id]++
			}
		}
		f.Close()
	}
	s.mu.Lock()
	for id, n := range s.goExec {
		execs[id] += n
	}
	s.mu.Unlock()
	reruns, jobsRerun := 0, 0
	for _, n := range execs {
		if n > 1 {
			reruns += n - 1
			jobsRerun++
		}
	}
	fmt.Println("soak: results")
	fmt.Printf("  submitted (acknowledged)  %d\n", len(acked))
	fmt.Printf("  done                      %d\n", status["done"])
	fmt.Printf("  dead-lettered             %d\n", status["dead_letter"])
	fmt.Printf("  cancelled                 %d (cancel requests: %d)\n", status["cancelled"], s.cancelled.Load())
	fmt.Printf("  still queued/processing   %d\n", status["queued"]+status["processing"])
	fmt.Printf("  replayed from the DLQ     %d (new jobs)\n", s.replayed.Load())
	fmt.Printf("  kills                     %v\n", s.kills)
	fmt.Printf("  executions                %d of %d jobs; %d re-executions of %d jobs (retries and crashes: allowed, counted)\n",
		sumMap(execs), len(execs), reruns, jobsRerun)
	fmt.Printf("  LOST                      %d\n", len(lost))
	if len(lost) > 0 {
		return fmt.Errorf("%d acknowledged jobs lost, e.g. %v", len(lost), lost[:min(len(lost), 10)])
	}
	return nil
}

func sumMap(m map[int64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
