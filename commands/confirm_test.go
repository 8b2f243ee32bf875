//go:build linux

package commands

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// openPTY opens a pseudo-terminal and returns its two ends: what the
// master writes, the slave reads as typed on a terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	var unlock int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlockpt: %v", e)
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, m.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ptsname: %v", e)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// deadServer is a server over a memory store holding n dead-letter rows
// of queue q and n queued jobs of queue d.
func deadServer(t *testing.T, n int) (string, *app.Service) {
	t.Helper()
	ctx := context.Background()
	svc := app.NewService(memory.New(app.StoreOptions{}), nil, app.SystemClock{}, app.NewBus(), zerolog.Nop())
	for range n {
		if _, err := svc.Submit(ctx, []app.SubmitInput{{Queue: "q", Kind: "k"}, {Queue: "d", Kind: "k"}}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := svc.BulkDead(ctx, app.BulkMove, app.BulkInput{Queue: "q"}, "test"); err != nil || res.Count != n {
		t.Fatalf("move: %v, %v", res, err)
	}
	srv := httptest.NewServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
	t.Cleanup(srv.Close)
	return srv.URL, svc
}

// On a real terminal the bulk actions ask; only "y" or "yes" goes ahead,
// anything else changes nothing and exits 1.
func TestConfirmOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		answer string
		code   int
		left   func(st *app.Stats) int64
	}{
		{[]string{"dlq", "purge", "--queue", "q"}, "n\n", 1, func(st *app.Stats) int64 { return st.Total.DeadLetter }},
		{[]string{"dlq", "purge", "--queue", "q"}, "\n", 1, func(st *app.Stats) int64 { return st.Total.DeadLetter }},
		{[]string{"dlq", "purge", "--queue", "q"}, "yes\n", 0, func(st *app.Stats) int64 { return st.Total.DeadLetter }},
		{[]string{"queues", "drain", "d"}, "no\n", 1, func(st *app.Stats) int64 { return st.Total.Queued }},
		{[]string{"queues", "drain", "d"}, "y\n", 0, func(st *app.Stats) int64 { return st.Total.Queued }},
	} {
		url, svc := deadServer(t, 3)
		master, slave := openPTY(t)
		if _, err := master.Write([]byte(tc.answer)); err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		code := Run(t.Context(), append(append([]string{"queue"}, tc.args...), "--server", url), slave, &out, &errb, Build{})
		st, err := svc.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := int64(3)
		if tc.code == 0 {
			want = 0
		}
		name := strings.Join(tc.args, " ") + " answered " + strings.TrimSpace(tc.answer)
		if code != tc.code || tc.left(st) != want || !strings.Contains(errb.String(), "Go on? [y/N]") {
			t.Errorf("%s: exit %d, %d rows left, stderr %q; want exit %d, %d left, and a question", name, code, tc.left(st), errb.String(), tc.code, want)
		}
		if tc.code == 1 && !strings.Contains(errb.String(), "nothing changed") {
			t.Errorf("%s: stderr %q does not say nothing changed", name, errb.String())
		}
	}
}

// Without a terminal on stdin (/dev/null under cron or systemd, a pipe in
// CI) nothing is asked and nothing changes: exit 2, naming --yes. /dev/null
// is a character device too, so a mode check alone would take it for one.
func TestConfirmWithoutATerminal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin func(t *testing.T) *os.File
	}{
		{"/dev/null", func(t *testing.T) *os.File {
			f, err := os.Open(os.DevNull)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return f
		}},
		{"a pipe saying y", func(t *testing.T) *os.File {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("y\n"))
			w.Close()
			t.Cleanup(func() { r.Close() })
			return r
		}},
	} {
		for _, args := range [][]string{{"dlq", "purge", "--queue", "q"}, {"dlq", "move", "--queue", "d"}, {"queues", "drain", "d"}} {
			url, svc := deadServer(t, 3)
			var out, errb bytes.Buffer
			code := Run(t.Context(), append(append([]string{"queue"}, args...), "--server", url), tc.stdin(t), &out, &errb, Build{})
			st, err := svc.Stats(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if code != 2 || !strings.Contains(errb.String(), "pass --yes") || st.Total.DeadLetter != 3 || st.Total.Queued != 3 {
				t.Errorf("%s with stdin %s: exit %d, stderr %q, %d dead and %d queued left; want exit 2 naming --yes, 3 and 3",
					strings.Join(args, " "), tc.name, code, errb.String(), st.Total.DeadLetter, st.Total.Queued)
			}
		}
	}
}
