package commands_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/commands"
)

// The flow-control flags refuse what the server would, before any request,
// naming the flags and the fix (exit 2).
func TestFlowFlagUsageErrors(t *testing.T) {
	t.Setenv("QUEUE_SERVER", "http://127.0.0.1:1") // nothing listens: a request would fail with exit 1
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--kind", "k", "--debounce", "30s"}, "--debounce needs --key"},
		{[]string{"submit", "--kind", "k", "--throttle", "1m"}, "--throttle needs --key"},
		{[]string{"submit", "--kind", "k", "--key", "a", "--debounce", "30s", "--throttle", "1m"}, "--debounce and --throttle: give one of --unique, --debounce and --throttle"},
		{[]string{"submit", "--kind", "k", "--key", "a", "--unique", "--debounce", "30s"}, "--debounce and --unique: give one of"},
		{[]string{"submit", "--kind", "k", "--key", "a", "--debounce", "30s", "--delay", "1m"}, "--debounce sets when the job runs"},
		{[]string{"submit", "--kind", "k", "--key", "a", "--debounce", "soon"}, "--debounce: invalid duration"},
		{[]string{"submit", "--kind", "k", "--unique-by", "kind,colour"}, `--unique-by "colour": give key, kind or payload`},
		{[]string{"submit", "--kind", "k", "--unique-by", "key"}, "--unique-by key needs the job's key: add --key"},
		{[]string{"submit", "--kind", "k", "--unique-while", "queued,failed"}, `--unique-while "failed": give queued, scheduled, processing or done`},
		{[]string{"submit", "--kind", "k", "--unique-for", "a while"}, "--unique-for: invalid duration"},
		{[]string{"submit", "--kind", "k", "--key", strings.Repeat("k", 256)}, "--key is 256 bytes; at most 255"},
		{[]string{"work", "--queue", "a", "--queues", "b,c", "--", "true"}, `--queue "a" and --queues "b,c" both name the queues to work`},
		{[]string{"work", "--queues", "a=1,b", "--", "true"}, "give every queue a weight (critical=6,default=3) or none"},
		{[]string{"work", "--queues", "a=x", "--", "true"}, `the weight of queue "a" is not a whole number (e.g. --queues critical=6,default=3`},
		{[]string{"work", "--queues", "a=0,b=1", "--", "true"}, `the weight of queue "a" is 0; give 1 to 1000`},
		{[]string{"work", "--queues", "a,a", "--", "true"}, `queue "a" is named twice`},
		{[]string{"queues", "keys"}, "give one queue name, e.g. `queue queues keys default`"},
		{[]string{"queues", "keys", "sync", "--top", "0"}, "--top 0: want 1 to 100"},
	} {
		code, out, errs := runWithin(t, 5*time.Second, tc.args...) // a worker that starts anyway stops
		if code != 2 || !strings.Contains(out+errs, tc.want) {
			t.Errorf("queue %s: exit %d, output %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out+errs, tc.want)
		}
	}
	t.Setenv("QUEUE_QUEUE", "mail") // the environment counts as setting --queue
	if code, out, errs := runWithin(t, 5*time.Second, "work", "--queues", "a,b", "--", "true"); code != 2 || !strings.Contains(out+errs, "QUEUE_QUEUE and QUEUE_QUEUES count too") {
		t.Errorf("QUEUE_QUEUE=mail queue work --queues a,b: exit %d, %q", code, out+errs)
	}
}

// runWithin is run with a deadline: a command that should have refused to
// start (a worker, a wait) ends with the test instead of hanging it.
func runWithin(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var out, errb lockedBuffer
	code := commands.Run(ctx, append([]string{"queue"}, args...), strings.NewReader(""), &out, &errb, commands.Build{Version: "test"})
	return code, out.String(), errb.String()
}

// serveFlow starts `queue serve` on a memory store with the config text,
// and points the client commands at it.
func serveFlow(t *testing.T, config string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("QUEUE_SERVER", "http://"+addr)
	t.Setenv("QUEUE_LOG_FORMAT", "json")
	path := filepath.Join(t.TempDir(), "queue.toml")
	os.WriteFile(path, []byte(config), 0o600)
	start(t, `"queue serving"`, "serve", "--addr", addr, "--db", "memory", "--config", path)
}

// mustRun runs a command that must exit 0 and returns its stdout and stderr.
func mustRun(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, out, errs := run(t, args...)
	if code != 0 {
		t.Fatalf("queue %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
	}
	return out, errs
}

// A key's jobs on a queue with key_concurrency = 1 wait for their key, and
// the CLI shows it: jobs list (KEY, "(waiting)"), jobs list --key, jobs
// show, queues list and queues keys.
func TestKeysOverTheCLI(t *testing.T) {
	serveFlow(t, "[queues.sync]\nkey_concurrency = 1\nkey_rate = \"10/1m\"\n")
	for range 3 {
		mustRun(t, "submit", "--queue", "sync", "--kind", "account.sync", "--key", "acct-1")
	}
	mustRun(t, "submit", "--queue", "sync", "--kind", "account.sync", "--key", "acct-2")
	mustRun(t, "submit", "--queue", "sync", "--kind", "account.sync")

	out, _ := mustRun(t, "jobs", "list", "--queue", "sync")
	for _, want := range []string{"KEY\n", "\n1 .* acct-1\n", "\n2 .* acct-1 \\(waiting\\)\n", "\n3 .* acct-1 \\(waiting\\)\n", "\n4 .* acct-2\n", "\n5 .* -\n"} {
		if !regexpMatch(want, "\n"+out) {
			t.Errorf("jobs list: no %q in\n%s", want, out)
		}
	}
	out, _ = mustRun(t, "jobs", "list", "--key", "acct-1", "--json")
	var page struct {
		Jobs []struct {
			ID   int64  `json:"id"`
			Key  string `json:"key"`
			Held bool   `json:"waiting_for_key"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.Jobs) != 3 {
		t.Fatalf("jobs list --key acct-1: %v, %s; want jobs 3, 2, 1", err, out)
	}
	for _, j := range page.Jobs {
		if j.Key != "acct-1" || j.Held != (j.ID != 1) {
			t.Errorf("jobs list --key acct-1: job %+v", j)
		}
	}
	out, _ = mustRun(t, "jobs", "show", "2")
	if !regexpMatch(`(?m)^status +queued, waiting for its key`, out) || !regexpMatch(`(?m)^key +acct-1$`, out) {
		t.Errorf("jobs show 2:\n%s", out)
	}
	out, _ = mustRun(t, "jobs", "show", "1")
	if !regexpMatch(`(?m)^status +queued$`, out) || !regexpMatch(`(?m)^key +acct-1$`, out) {
		t.Errorf("jobs show 1:\n%s", out)
	}
	if out, _ = mustRun(t, "jobs", "show", "5"); strings.Contains(out, "key") {
		t.Errorf("jobs show 5 (no key) shows a key:\n%s", out)
	}
	out, _ = mustRun(t, "queues", "list")
	if !regexpMatch(`PER KEY\n(.*\n)*sync +active .* 1 at once, 10/1m\n`, out) {
		t.Errorf("queues list:\n%s", out)
	}
	out, _ = mustRun(t, "queues", "keys", "sync")
	for _, want := range []string{"queue sync: per key 1 at once, 10/1m\n", "2 jobs waiting for their key\n", "acct-1 +3 +0 +2\n"} {
		if !regexpMatch(want, out) {
			t.Errorf("queues keys sync: no %q in\n%s", want, out)
		}
	}
	out, _ = mustRun(t, "queues", "keys", "sync", "--top", "1", "--json")
	var st struct {
		Held    int `json:"held"`
		AtLimit []struct {
			Key string `json:"key"`
		} `json:"at_limit"`
		Busiest []struct{} `json:"busiest"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Held != 2 || len(st.AtLimit) != 1 || st.AtLimit[0].Key != "acct-1" || len(st.Busiest) != 1 {
		t.Errorf("queues keys sync --top 1 --json: %v, %s", err, out)
	}
	out, _ = mustRun(t, "queues", "keys", "plain")
	if !strings.Contains(out, "per key none (its keyed jobs run as plain jobs") || !strings.Contains(out, "0 jobs waiting") {
		t.Errorf("queues keys plain:\n%s", out)
	}
}

// --unique, --debounce and --throttle answer with the job stored before:
// the same id on stdout, a note on stderr, "duplicate": true with --json.
func TestSubmitDuplicates(t *testing.T) {
	serveFlow(t, "")
	first, errs := mustRun(t, "submit", "--kind", "report.build", "--key", "doc-7", "--unique-by", "key,kind", "--payload", `{"v":1}`)
	if strings.Contains(errs, "nothing new") {
		t.Errorf("first unique submission says %q", errs)
	}
	again, errs := mustRun(t, "submit", "--kind", "report.build", "--key", "doc-7", "--unique-by", "key,kind", "--payload", `{"v":2}`)
	if again != first || !strings.Contains(errs, "job 1 matches (unique): nothing new stored") {
		t.Errorf("unique again: %q %q, want %q and a note", again, errs, first)
	}
	out, _ := mustRun(t, "submit", "--kind", "report.build", "--key", "doc-7", "--unique-by", "key,kind", "--json")
	if !strings.Contains(out, `"id": 1,`) || !strings.HasSuffix(strings.TrimSpace(out), `"duplicate": true
}`) {
		t.Errorf("unique --json:\n%s", out)
	}
	if out, _ := mustRun(t, "submit", "--kind", "report.build", "--key", "doc-8", "--unique-by", "key,kind", "--json"); strings.Contains(out, "duplicate") {
		t.Errorf("a new unique job says duplicate:\n%s", out)
	}
	// --unique alone: kind and payload (and the key).
	a, _ := mustRun(t, "submit", "--kind", "k", "--unique", "--payload", `{"a":1,"b":2}`)
	b, errs := mustRun(t, "submit", "--kind", "k", "--unique", "--payload", `{"a": 1, "b": 2}`)
	c, _ := mustRun(t, "submit", "--kind", "k", "--unique", "--payload", `{"b":2,"a":1}`)
	if a != b || !strings.Contains(errs, "(unique)") || c == a {
		t.Errorf("--unique: %q, %q (%q), %q: want the compacted payload to match and another key order not to", a, b, errs, c)
	}

	d1, _ := mustRun(t, "submit", "--queue", "hooks", "--kind", "webhook", "--key", "repo-9", "--debounce", "30s", "--payload", `{"n":1}`)
	d2, errs := mustRun(t, "submit", "--queue", "hooks", "--kind", "webhook", "--key", "repo-9", "--debounce", "30s", "--payload", `{"n":2}`)
	if d1 != d2 || !strings.Contains(errs, "debounced: its payload replaced, it runs at") {
		t.Errorf("debounce: %q then %q (%q), want the same job and a note", d1, d2, errs)
	}
	if out, _ := mustRun(t, "jobs", "show", strings.TrimSpace(d1)); !regexpMatch(`(?m)^payload +\{"n":2\}$`, out) {
		t.Errorf("the debounced job after two submissions:\n%s", out)
	}

	t1, _ := mustRun(t, "submit", "--queue", "hooks", "--kind", "notify", "--key", "acct-1", "--throttle", "1m")
	t2, errs := mustRun(t, "submit", "--queue", "hooks", "--kind", "notify", "--key", "acct-1", "--throttle", "1m")
	if t1 != t2 || !strings.Contains(errs, `throttled: job `+strings.TrimSpace(t1)+` already took this 1m for key "acct-1"`) {
		t.Errorf("throttle: %q then %q (%q)", t1, t2, errs)
	}
}

// queue work --queues claims from several queues (POST /api/claim): in a
// strict order, the second queue's jobs run when the first has none.
func TestWorkQueues(t *testing.T) {
	serveFlow(t, "")
	start(t, `"worker started"`, "work", "--queues", "critical,default", "--poll-wait", "1s", "--", "sh", "-c", `cat >/dev/null; echo "\"$QUEUE_QUEUE\""`)
	for _, q := range []string{"critical", "default"} {
		code, out, errs := runWithin(t, 10*time.Second, "submit", "--queue", q, "--kind", "k", "--wait", "--json")
		if code != 0 || !strings.Contains(out, `"result": "`+q+`"`) {
			t.Errorf("a job of %s under --queues critical,default: %s%s", q, out, errs)
		}
	}
	if code, out, errs := runWithin(t, 10*time.Second, "submit", "--queue", "low", "--kind", "k", "--ttl", "2s", "--wait"); code != 1 || !strings.Contains(errs, "ended cancelled") {
		t.Errorf("a job of a queue not named ran: exit %d %s%s", code, out, errs)
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
