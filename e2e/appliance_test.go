package e2e

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Under a NOTIFY_SOCKET, serve tells systemd READY=1 once ready and
// STOPPING=1 on SIGTERM.
func TestServeNotifiesSystemd(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 10)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "serve", "--addr", addr)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	next := func() string {
		select {
		case m := <-msgs:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no notification within 10s")
			return ""
		}
	}
	if m := next(); !strings.Contains(m, "READY=1") {
		t.Fatalf("first notification %q, want READY=1", m)
	}
	// Ready means ready: the API answers at once.
	if st, _, err := call("GET", "http://"+addr+"/readyz", nil); err != nil || st != 200 {
		t.Fatalf("readyz after READY=1: %d %v", st, err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if m := next(); !strings.Contains(m, "STOPPING=1") {
		t.Fatalf("notification after SIGTERM %q, want STOPPING=1", m)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
}

// `queue backup` during a stream of submissions gives a file that opens and
// holds every job acknowledged before the backup started.
func TestBackupDuringSubmissionsHoldsEveryAcknowledgedJob(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "")
	var mu sync.Mutex
	var acked []int64
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
				st, m, err := call("POST", p.url+"/api/jobs", map[string]any{"kind": "k", "payload": strings.Repeat("x", 200)})
				if err == nil && st == 201 {
					mu.Lock()
					acked = append(acked, id(m))
					mu.Unlock()
				}
			}
		}()
	}
	// At least 50 acknowledged before the backup begins (a fixed half
	// second gave 22 with the whole suite on two cores).
	var before []int64
	for deadline := time.Now().Add(10 * time.Second); len(before) < 50 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		before = append(before[:0], acked...)
		mu.Unlock()
	}
	out := filepath.Join(dir, "backup.db")
	b := exec.Command(bin, "backup", "--db", filepath.Join(dir, "queue.db"), out)
	msg, err := b.CombinedOutput()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("backup: %v\n%s", err, msg)
	}
	st, err := os.Stat(out)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v mode %v, want 0600", err, st.Mode())
	}
	db, err := sql.Open("sqlite", "file:"+out+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity of the backup: %v %s", err, ok)
	}
	missing := 0
	for _, jid := range before {
		var n int
		db.QueryRow(`SELECT count(*) FROM jobs WHERE id = ?`, jid).Scan(&n)
		if n != 1 {
			missing++
		}
	}
	var total int
	db.QueryRow(`SELECT count(*) FROM jobs`).Scan(&total)
	t.Logf("%d jobs acknowledged before the backup began, %d in the backup (%s)", len(before), total, strings.TrimSpace(string(msg)))
	if missing > 0 || len(before) < 50 {
		t.Fatalf("%d of %d acknowledged jobs missing from the backup", missing, len(before))
	}
}

// doctor reads a database a server is using and exits 0 when all is well.
func TestDoctorWhileServing(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "")
	call("POST", p.url+"/api/jobs", map[string]any{"kind": "k"})
	out, err := exec.Command(bin, "doctor", "--db", filepath.Join(dir, "queue.db")).CombinedOutput()
	if err != nil || !regexp.MustCompile(`integrity\s+ok`).Match(out) || !strings.Contains(string(out), "no problems found") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "migrate", "--db", filepath.Join(dir, "queue.db")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("pid %d", p.cmd.Process.Pid)) {
		t.Fatalf("migrate while serving: %v\n%s", err, out)
	}
}

// The database, its WAL and the lock file are readable by their owner only.
func TestDatabaseFilesAreOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	p := start(t, dir, "")
	call("POST", p.url+"/api/jobs", map[string]any{"kind": "k"})
	for _, name := range []string{"queue.db", "queue.db-wal", "queue.db.lock"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if perm := st.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s has mode %v, want 0600", name, perm)
		}
	}
}
