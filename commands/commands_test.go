package commands_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queuehq/queue/commands"
)

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := commands.Run(t.Context(), append([]string{"queue"}, args...), strings.NewReader(""), &out, &errb, commands.Build{Version: "test"})
	return code, out.String(), errb.String()
}

// Exit codes: 0 ok, 1 failure, 2 usage error; messages name the problem and the fix.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[queues.mail]\nmax_atempts = 3\n"), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"version"}, 0, "queue test"},
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{}, 2, "give a command"},
		{[]string{"submit", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"dlq", "list", "--bogus"}, 2, "see `queue dlq list --help`"},
		{[]string{"config", "check", "--bogus"}, 2, "see `queue config check --help`"},
		{[]string{"submit"}, 2, "--kind is required"},
		{[]string{"submit", "--kind", "k", "--delay", "soon"}, 2, "--delay: invalid duration"},
		{[]string{"jobs", "show"}, 2, "give one job id"},
		{[]string{"jobs", "show", "x"}, 2, `"x" is not a job id`},
		{[]string{"dlq", "purge"}, 2, "--all"},
		{[]string{"dlq", "move", "x"}, 2, `"x" is not a job id`},
		{[]string{"dlq", "replay", "--reason", "max_attempts"}, 2, "--reason and --older-than only narrow"},
		{[]string{"dlq", "replay", "--queue", "q", "--payload", "{}"}, 2, "give an ID"},
		{[]string{"serve", "--db", "mysql://x"}, 2, "unsupported"},
		{[]string{"serve", "--addr", "10.1.2.3:8080"}, 2, "--token"},
		{[]string{"serve", "--config", bad}, 2, "bad.toml:2: queues.mail.max_atempts: unknown key"},
		{[]string{"serve", "--config", filepath.Join(dir, "none.toml")}, 2, "none.toml: cannot read it"},
		{[]string{"config", "check"}, 2, "give one config file"},
		{[]string{"config", "check", bad}, 2, "max_atempts"},
		{[]string{"config", "check", "--config", bad}, 2, "max_atempts"},
		{[]string{"config", "check", "--config", bad, "other.toml"}, 2, "not both"},
		{[]string{"backup"}, 2, "give the output file"},
		{[]string{"jobs", "list", "--server", "http://127.0.0.1:1"}, 1, "is `queue serve` running"},
		{[]string{"jobs", "list", "--server", "127.0.0.1:1"}, 1, "is `queue serve` running at http://127.0.0.1:1?"},
		{[]string{"jobs", "list", "--server", "ftp://x"}, 2, `--server "ftp://x" is not a server address`},
		// Unknown subcommands and extra arguments: exit 2 with the list or the fix.
		{[]string{"jobs", "get", "1"}, 2, "unknown command \"get\" for `queue jobs`; its commands are: list, show, cancel"},
		{[]string{"config", "frob"}, 2, "its commands are: check ("},
		{[]string{"config"}, 2, "`queue config` needs one of its commands: check"},
		{[]string{"nope"}, 2, "the commands are: serve, submit, jobs"},
		{[]string{"stats", "now"}, 2, "`queue stats` takes no arguments"},
		{[]string{"version", "x"}, 2, "takes no arguments"},
		{[]string{"jobs", "list", "--limit", "0"}, 2, "--limit 0: want 1 to 1000"},
		{[]string{"dlq", "list", "--limit", "5000"}, 2, "--limit 5000: want 1 to 1000"},
		{[]string{"audit", "--limit", "-1"}, 2, "--limit -1"},
		// Checks before start.
		{[]string{"work", "--queue", "q", "--", "./missing.sh"}, 2, "command ./missing.sh does not exist"},
		{[]string{"work", "--queue", "q", "--", "no-such-program-here"}, 2, `command "no-such-program-here" is not found on PATH`},
		{[]string{"work", "--queue", "q", "--dir", filepath.Join(dir, "nodir"), "--", "sh"}, 2, "--dir: working directory"},
		{[]string{"serve", "--db", filepath.Join(dir, "nodir", "q.db")}, 2, "does not exist; create it"},
		{[]string{"serve", "--addr", "8080"}, 2, `address "8080" (--addr, QUEUE_ADDR or server.addr) is not HOST:PORT`},
	} {
		code, out, errs := run(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("queue %s: exit %d, output %q; want exit %d and %q", strings.Join(tc.args, " "), code, out+errs, tc.code, tc.want)
		}
	}
}

func TestConfigCheckPrintsNextFireTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.toml")
	os.WriteFile(path, []byte(`
[queues.mail]
max_attempts = 3
concurrency = 2

[[periodic]]
name = "nightly"
cron = "0 3 * * *"
timezone = "Europe/Berlin"
queue = "reports"
kind = "report.nightly"
payload = { format = "pdf" }
`), 0o600)
	code, out, errs := run(t, "config", "check", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, `periodic "nightly"`) || strings.Count(out, "T03:00:00+0") != 5 {
		t.Fatalf("output:\n%s", out)
	}
}
