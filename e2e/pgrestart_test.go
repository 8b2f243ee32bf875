package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// privatePostgres runs a PostgreSQL cluster of the test's own (initdb into a
// temp dir, a free port), so the test may stop and start it without
// disturbing anyone. It needs Debian's postgresql package and root (to run
// it as the postgres user); elsewhere the test skips, except with CI=true.
type privatePostgres struct {
	t    *testing.T
	bin  string
	data string
	port string
}

func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 || os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("a private PostgreSQL needs /usr/lib/postgresql/*/bin and root")
		}
		t.Skip("a private PostgreSQL needs Debian's postgresql package and root")
	}
	dir, err := os.MkdirTemp("", "queue-pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	p := &privatePostgres{t: t, bin: filepath.Dir(bins[len(bins)-1]), data: filepath.Join(dir, "data")}
	_, port, _ := splitAddr(freeAddr(t))
	p.port = port
	if out, err := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(p.bin, "initdb"), "-D", p.data, "-A", "trust", "-U", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.start()
	t.Cleanup(func() { p.ctl("stop", "-m", "immediate") })
	return p
}

func splitAddr(a string) (string, string, error) {
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] == ':' {
			return a[:i], a[i+1:], nil
		}
	}
	return a, "", fmt.Errorf("no port in %q", a)
}

func (p *privatePostgres) ctl(args ...string) error {
	all := append([]string{"-u", "postgres", "--", filepath.Join(p.bin, "pg_ctl"), "-D", p.data}, args...)
	out, err := exec.Command("runuser", all...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg_ctl %v: %v\n%s", args, err, out)
	}
	return nil
}

func (p *privatePostgres) start() {
	p.t.Helper()
	if err := p.ctl("-w", "-l", filepath.Join(filepath.Dir(p.data), "log"), "-o",
		fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=off", p.port, filepath.Dir(p.data)), "start"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *privatePostgres) dsn() string {
	return "postgres://postgres@127.0.0.1:" + p.port + "/postgres?sslmode=disable"
}

// PostgreSQL stopped and started under load: the API answers 503 while it is
// down, then serves fully again by itself, and nothing acknowledged is lost.
func TestPostgresRestartUnderLoad(t *testing.T) {
	pg := startPrivatePostgres(t)
	p := start(t, t.TempDir(), "", "--db", pg.dsn())
	var mu sync.Mutex
	acked := map[int64]bool{}
	var unavailable, other atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, m, err := call("POST", p.url+"/api/jobs", map[string]any{"kind": "k"})
				switch {
				case err != nil:
					other.Add(1)
				case st == 201:
					mu.Lock()
					acked[id(m)] = true
					mu.Unlock()
				case st == 503:
					unavailable.Add(1)
					time.Sleep(20 * time.Millisecond)
				default:
					other.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond)
	if err := pg.ctl("-w", "-m", "fast", "stop"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	readyDown, _, _ := call("GET", p.url+"/readyz", nil)
	downSeen := unavailable.Load()
	pg.start()
	var readyUp int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if readyUp, _, _ = call("GET", p.url+"/readyz", nil); readyUp == 200 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // submissions flow again
	close(stop)
	wg.Wait()
	mu.Lock()
	n := len(acked)
	mu.Unlock()
	t.Logf("%d acknowledged, %d answered 503 while PostgreSQL was down, %d other errors; readyz down %d, up %d",
		n, unavailable.Load(), other.Load(), readyDown, readyUp)
	if readyDown != 503 || downSeen == 0 {
		t.Fatalf("while PostgreSQL was down: readyz %d, %d submissions answered 503", readyDown, downSeen)
	}
	if readyUp != 200 {
		t.Fatalf("readyz did not come back: %d", readyUp)
	}
	if other.Load() > 0 {
		t.Fatalf("%d answers were neither 201 nor 503", other.Load())
	}
	// Full service: everything acknowledged is there and can be worked.
	st, _, _ := call("POST", p.url+"/api/jobs", map[string]any{"kind": "after"})
	if st != 201 {
		t.Fatalf("submit after the restart: %d", st)
	}
	for jid := range acked {
		if st, _, err := call("GET", fmt.Sprintf("%s/api/jobs/%d", p.url, jid), nil); err != nil || st != 200 {
			t.Fatalf("acknowledged job %d: %d %v", jid, st, err)
		}
	}
	worked := 0
	for {
		st, m, err := call("POST", p.url+"/api/queues/default/claim", map[string]any{"limit": 500})
		if err != nil || st != 200 {
			t.Fatalf("claim: %d %v", st, err)
		}
		jobs := m["jobs"].([]any)
		if len(jobs) == 0 {
			break
		}
		items := []map[string]any{}
		for _, j := range jobs {
			jm := j.(map[string]any)
			items = append(items, map[string]any{"id": jm["id"], "lease": jm["lease"]})
		}
		if st, _, err := call("POST", p.url+"/api/jobs/complete", map[string]any{"jobs": items}); err != nil || st != 200 {
			t.Fatalf("complete: %d %v", st, err)
		}
		worked += len(jobs)
	}
	if worked < n+1 {
		t.Fatalf("worked %d jobs, acknowledged %d", worked, n+1)
	}
}
