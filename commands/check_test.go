package commands_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/commands"
)

// runServe runs `queue serve args...`, stopping it after a few seconds if
// it starts after all (the failure these tests look for).
func runServe(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := commands.Run(ctx, append([]string{"queue", "serve"}, args...), strings.NewReader(""), &out, &errb, commands.Build{Version: "test"})
	return code, errb.String()
}

// Every config serve refuses, `config check` refuses with the same message
// (exit 2), and serve refuses it before it touches the database: a new
// database file is never created for a config that cannot run.
func TestConfigCheckRefusesWhatServeRefuses(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "job.sh")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	shortToken := filepath.Join(dir, "short.token")
	os.WriteFile(shortToken, []byte("abc\n"), 0o600)
	for _, tc := range []struct {
		name, config, want string
	}{
		{"unknown key", "[queues.mail]\nmax_atempts = 3\n", "queues.mail.max_atempts: unknown key"},
		{"missing worker command", "[[workers]]\ncommand = [\"./missing.sh\"]\n", "workers[0].command: command ./missing.sh does not exist"},
		{"worker command not on PATH", "[[workers]]\ncommand = [\"no-such-program-here\"]\n", `command "no-such-program-here" is not found on PATH`},
		{"worker command not executable", "[[workers]]\ncommand = [\"" + notExec + "\"]\n", "is not executable"},
		{"worker dir missing", "[[workers]]\ncommand = [\"sh\"]\ndir = \"" + filepath.Join(dir, "nodir") + "\"\n", "workers[0].dir: working directory"},
		{"short token", "[[tokens]]\nname = \"ops\"\ntoken = \"short\"\n", "tokens[0].token: token \"ops\" is too short"},
		{"short token file", "[[tokens]]\nname = \"ops\"\ntoken_file = \"" + shortToken + "\"\n", "is too short"},
		{"missing token file", "[[tokens]]\nname = \"ops\"\ntoken_file = \"" + filepath.Join(dir, "none") + "\"\n", "tokens[0].token_file"},
		{"open address without a token", "[server]\naddr = \"0.0.0.0:8080\"\n", "refusing to listen on 0.0.0.0:8080 without a token"},
		{"address without a port", "[server]\naddr = \"localhost\"\n", `address "localhost"`},
		{"unsupported database", "[server]\ndb = \"mysql://x\"\n", "unsupported"},
		{"database directory missing", "[server]\ndb = \"" + filepath.Join(dir, "nodir", "q.db") + "\"\n", "does not exist; create it"},
		{"bad cron", "[[periodic]]\nkind = \"k\"\ncron = \"every day\"\n", "periodic[0].cron"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".toml")
			os.WriteFile(path, []byte(tc.config), 0o600)
			code, _, errs := run(t, "config", "check", path)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("config check: exit %d, %q; want exit 2 and %q", code, errs, tc.want)
			}
			db := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".db")
			args := []string{"--config", path, "--log-format", "json"}
			if !strings.Contains(tc.config, "db =") {
				args = append(args, "--db", db)
			}
			code, errs = runServe(t, args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("serve: exit %d, %q; want exit 2 and %q", code, errs, tc.want)
			}
			if _, err := os.Stat(db); !os.IsNotExist(err) {
				t.Errorf("serve refused the config but left %s behind (%v)", db, err)
			}
		})
	}
}

// A port already taken stops serve before it creates the database.
func TestServeOnATakenPortLeavesNoDatabase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	db := filepath.Join(t.TempDir(), "q.db")
	code, errs := runServe(t, "--addr", ln.Addr().String(), "--db", db, "--log-format", "json")
	if code != 1 || !strings.Contains(errs, "pick another --addr") {
		t.Fatalf("serve on a taken port: exit %d, %q", code, errs)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatalf("serve could not listen but created %s (%v)", db, err)
	}
}

// config check reads serve's environment as serve does: a token in
// QUEUE_TOKEN makes an open address acceptable to both.
func TestConfigCheckReadsServesEnvironment(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.toml")
	os.WriteFile(path, []byte("[server]\naddr = \"0.0.0.0:8080\"\n"), 0o600)
	t.Setenv("QUEUE_TOKEN", "0123456789abcdef0123")
	if code, out, errs := run(t, "config", "check", path); code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("config check with QUEUE_TOKEN: exit %d, %s%s", code, out, errs)
	}
	t.Setenv("QUEUE_TOKEN", "short")
	if code, _, errs := run(t, "config", "check", path); code != 2 || !strings.Contains(errs, "--token is too short") {
		t.Fatalf("config check with a short QUEUE_TOKEN: exit %d, %s", code, errs)
	}
}
