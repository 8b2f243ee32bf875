package e2e

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

func writeConfig(t *testing.T, dir, text string) string {
	t.Helper()
	path := filepath.Join(dir, "queue.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// With retention = "2s", a done job disappears after the window.
func TestRetentionDeletesDoneJobsAfterTheWindow(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
[maintenance]
retention = "@every 1s"

[queues.short]
retention = "2s"
`)
	p := start(t, dir, "", "--config", cfg)
	ids := map[string]int64{}
	for _, q := range []string{"short", "long"} {
		st, m, err := call("POST", p.url+"/api/jobs", map[string]any{"queue": q, "kind": "k"})
		if err != nil || st != 201 {
			t.Fatalf("submit: %d %v", st, err)
		}
		ids[q] = id(m)
		_, cl, _ := call("POST", p.url+"/api/queues/"+q+"/claim", map[string]any{})
		j := cl["jobs"].([]any)[0].(map[string]any)
		if st, _, _ := call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", p.url, id(j)), map[string]any{"lease": j["lease"]}); st != 200 {
			t.Fatalf("complete: %d", st)
		}
	}
	gone := func(q string) bool {
		st, _, _ := call("GET", fmt.Sprintf("%s/api/jobs/%d", p.url, ids[q]), nil)
		return st == 404
	}
	if gone("short") {
		t.Fatal("deleted at once")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !gone("short") && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if !gone("short") {
		t.Fatal("a done job outlived retention = 2s by 8s")
	}
	if gone("long") {
		t.Fatal("the default retention (24h) deleted a job")
	}
}

// A periodic entry with @every 1s enqueues one job per tick; a restart in
// between neither skips nor doubles a tick.
func TestPeriodicEveryTickOnceAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
[[periodic]]
name = "tick"
cron = "@every 1s"
queue = "cron"
kind = "tick"
payload = { hello = "world" }
`)
	p := start(t, dir, "", "--config", cfg)
	time.Sleep(2500 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p = start(t, dir, p.addr, "--config", cfg)
	time.Sleep(2500 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "queue.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT p.fire_at, count(j.id) FROM periodic_fires p LEFT JOIN jobs j ON j.id = p.job_id
		WHERE p.entry = 'tick' GROUP BY p.fire_at ORDER BY p.fire_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var fires []int64
	for rows.Next() {
		var at, n int64
		rows.Scan(&at, &n)
		if n != 1 {
			t.Fatalf("fire at %d has %d jobs", at, n)
		}
		fires = append(fires, at)
	}
	var jobs int
	db.QueryRow(`SELECT count(*) FROM jobs WHERE queue = 'cron'`).Scan(&jobs)
	t.Logf("%d fires, %d jobs", len(fires), jobs)
	if len(fires) < 4 || jobs != len(fires) {
		t.Fatalf("%d fires and %d jobs over ~5s", len(fires), jobs)
	}
	for i := 1; i < len(fires); i++ {
		if fires[i]-fires[i-1] != 1000 {
			t.Fatalf("fires %v: a tick was skipped or doubled", fires)
		}
	}
}

// With concurrency = 2 and four workers, never more than two of the
// queue's jobs are processing; rate = 10 holds claims to about ten a second.
func TestQueueLimitsHoldAcrossWorkers(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `
[queues.two]
concurrency = 2

[queues.slow]
rate = 10
`)
	p := start(t, dir, "", "--config", cfg)
	jobs := make([]map[string]any, 200)
	for i := range jobs {
		jobs[i] = map[string]any{"queue": "two", "kind": "k"}
	}
	call("POST", p.url+"/api/jobs/batch", map[string]any{"jobs": jobs})
	for i := range jobs {
		jobs[i]["queue"] = "slow"
	}
	call("POST", p.url+"/api/jobs/batch", map[string]any{"jobs": jobs})

	var stop atomic.Bool
	var maxSeen atomic.Int64
	var samples atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample the processing count throughout
		defer wg.Done()
		for !stop.Load() {
			_, st, err := call("GET", p.url+"/api/stats", nil)
			if err == nil {
				n := int64(st["queues"].(map[string]any)["two"].(map[string]any)["processing"].(float64))
				samples.Add(1)
				if n > maxSeen.Load() {
					maxSeen.Store(n)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var done atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				st, m, err := call("POST", p.url+"/api/queues/two/claim", map[string]any{"limit": 2, "wait": "1s"})
				if err != nil || st != 200 {
					continue
				}
				for _, j := range m["jobs"].([]any) {
					jm := j.(map[string]any)
					time.Sleep(20 * time.Millisecond) // work
					call("POST", fmt.Sprintf("%s/api/jobs/%d/complete", p.url, id(jm)), map[string]any{"lease": jm["lease"]})
					done.Add(1)
				}
			}
		}()
	}
	var claimed atomic.Int64
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				st, m, err := call("POST", p.url+"/api/queues/slow/claim", map[string]any{"limit": 5, "wait": "500ms"})
				if err == nil && st == 200 {
					claimed.Add(int64(len(m["jobs"].([]any))))
				}
			}
		}()
	}
	time.Sleep(3 * time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("concurrency 2: max processing %d over %d samples, %d done; rate 10: %d claims in 3s", maxSeen.Load(), samples.Load(), done.Load(), claimed.Load())
	if maxSeen.Load() > 2 {
		t.Fatalf("saw %d jobs processing with concurrency = 2", maxSeen.Load())
	}
	if maxSeen.Load() < 2 || done.Load() < 20 {
		t.Fatalf("the limited queue barely ran: max %d, done %d", maxSeen.Load(), done.Load())
	}
	// 3s at 10/s plus a burst of 10, give or take a second's refill.
	if c := claimed.Load(); c < 25 || c > 50 {
		t.Fatalf("rate = 10: %d claims in 3s", c)
	}
}

// A submission beyond max_queued gets 429 queue_full with Retry-After.
func TestMaxQueuedAnswers429(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "[queues.small]\nmax_queued = 2\n")
	p := start(t, dir, "", "--config", cfg)
	for i := 0; i < 2; i++ {
		if st, _, _ := call("POST", p.url+"/api/jobs", map[string]any{"queue": "small", "kind": "k"}); st != 201 {
			t.Fatalf("submit %d: %d", i, st)
		}
	}
	req := `{"queue":"small","kind":"k"}`
	resp, err := client.Post(p.url+"/api/jobs", "application/json", strings.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third submit: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	_, st, _ := call("GET", p.url+"/api/stats", nil)
	if n := st["queues"].(map[string]any)["small"].(map[string]any)["queued"].(float64); n != 2 {
		t.Fatalf("%v queued after a refused submission", n)
	}
}

// A job with a ttl in a paused queue ends cancelled with reason expired.
func TestTTLExpiresInAPausedQueue(t *testing.T) {
	p := start(t, t.TempDir(), "")
	call("POST", p.url+"/api/queues/p/pause", nil)
	_, m, _ := call("POST", p.url+"/api/jobs", map[string]any{"queue": "p", "kind": "k", "ttl": "1s"})
	var job map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, job, _ = call("GET", fmt.Sprintf("%s/api/jobs/%d", p.url, id(m)), nil)
		if job["status"] == "cancelled" {
			break
		}
	}
	if job["status"] != "cancelled" || job["cancel_reason"] != "expired" {
		t.Fatalf("job with ttl 1s in a paused queue: %v %v", job["status"], job["cancel_reason"])
	}
}
