package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mountTmpfs mounts a small tmpfs for a disk-full test. It needs root (as on
// the CI machine); elsewhere the test is skipped, except with CI=true.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "small-disk")
	os.Mkdir(dir, 0o755)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mount a tmpfs (needs root): %v %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func freeBytes(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// The disk fills up under a running server: submissions answer 503
// unavailable, /readyz fails, nothing acknowledged is lost or half-written,
// and service resumes by itself when space is back.
func TestDiskFullAnswers503AndRecovers(t *testing.T) {
	mnt := mountTmpfs(t, "24m")
	p := start(t, mnt, "")
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for freeBytes(t, mnt) > 2<<20 {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	payload := strings.Repeat("x", 60<<10)
	var acked []int64
	got503 := false
	for i := 0; i < 400 && !got503; i++ {
		st, m, err := call("POST", p.url+"/api/jobs", map[string]any{"kind": "k", "payload": payload})
		switch {
		case err != nil:
			t.Fatalf("submit %d: %v", i, err)
		case st == 201:
			acked = append(acked, id(m))
		case st == 503:
			if e, _ := m["error"].(map[string]any); e["code"] != "unavailable" {
				t.Fatalf("503 with %v", m)
			}
			got503 = true
		default:
			t.Fatalf("submit %d: %d %v", i, st, m)
		}
	}
	if !got503 {
		t.Fatalf("no 503 after %d submissions on a full disk", len(acked))
	}
	if st, _, _ := call("GET", p.url+"/readyz", nil); st != 503 {
		t.Fatalf("/readyz with a full disk: %d", st)
	}
	// Reads still work, and everything acknowledged is there.
	for _, jid := range acked {
		if st, _, _ := call("GET", fmt.Sprintf("%s/api/jobs/%d", p.url, jid), nil); st != 200 {
			t.Fatalf("acknowledged job %d: %d while the disk is full", jid, st)
		}
	}
	os.Remove(filler) // space is back
	var st int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, _, _ = call("GET", p.url+"/readyz", nil); st == 200 {
			break
		}
	}
	if st != 200 {
		t.Fatalf("/readyz after space came back: %d", st)
	}
	st, m, _ := call("POST", p.url+"/api/jobs", map[string]any{"kind": "k", "payload": payload})
	if st != 201 {
		t.Fatalf("submit after space came back: %d %v", st, m)
	}
	t.Logf("%d submissions acknowledged before the disk filled; service resumed", len(acked))
	// Restart on the same file: nothing half-written.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p = start(t, mnt, p.addr)
	_, stats, _ := call("GET", p.url+"/api/stats", nil)
	if n := int(stats["total"].(map[string]any)["total"].(float64)); n != len(acked)+1 {
		t.Fatalf("after restart: %d jobs, want %d", n, len(acked)+1)
	}
}
