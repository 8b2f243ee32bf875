package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
)

// Flags every command that talks to a server takes.
func serverFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Value: "http://127.0.0.1:8080", Usage: "server URL", EnvVars: []string{"QUEUE_SERVER"}},
		&cli.StringFlag{Name: "token", Usage: "API token", EnvVars: []string{"QUEUE_TOKEN"}},
	}
}

// checkServer is the Before of every command with --server: a bare
// HOST:PORT means http://HOST:PORT; anything else that is not an http(s)
// URL with a host is a usage error naming the flag.
func checkServer(c *cli.Context) error {
	s := strings.TrimSpace(c.String("server"))
	if s != "" && !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if s == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return usagef("--server %q is not a server address: give http://HOST:PORT or HOST:PORT, e.g. http://127.0.0.1:8080", c.String("server"))
	}
	return c.Set("server", strings.TrimRight(s, "/"))
}

// checkLimit is the Action of every --limit (newApp sets it): a page of 1
// to 1000 rows; a value outside is a usage error, not quietly the default.
func checkLimit(c *cli.Context, n int) error {
	if n < 1 || n > 1000 {
		return usagef("--limit %d: want 1 to 1000 rows", n)
	}
	return nil
}

func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON instead of a table", EnvVars: []string{"QUEUE_JSON"}}
}

func withFlags(groups ...[]cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func newClient(c *cli.Context) *client.Client {
	return client.New(c.String("server"), client.WithToken(c.String("token")))
}

// remoteErr explains an error of a call to the server, naming the fix.
func remoteErr(c *cli.Context, err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		switch {
		case ce.Status == 401 && c.String("token") == "":
			return fmt.Errorf("%s needs a token: pass --token or set QUEUE_TOKEN", c.String("server"))
		case ce.Status == 401:
			return fmt.Errorf("%s refused the token given (401): check --token or QUEUE_TOKEN", c.String("server"))
		}
		return errors.New(ce.Message)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%v (is `queue serve` running at %s? set --server or QUEUE_SERVER)", err, c.String("server"))
	}
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

func age(t time.Time) string {
	d := time.Since(t)
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		s = "now"
		return s
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d.Hours()))
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if neg {
		return "in " + s
	}
	return s + " ago"
}

func idArg(c *cli.Context, what string) (int64, error) {
	if c.NArg() != 1 {
		return 0, usagef("give one %s id, e.g. `%s 42`", what, c.Command.HelpName)
	}
	id, err := strconv.ParseInt(c.Args().First(), 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%q is not a %s id (a positive number)", c.Args().First(), what)
	}
	return id, nil
}

func submitCommand() *cli.Command {
	return &cli.Command{
		Name:  "submit",
		Usage: "submit a job and print its id",
		UsageText: "queue submit --kind K [--queue Q] [--payload JSON|@file|-] [flags]\n\nExamples:\n" +
			"  queue submit --kind email.send --payload '{\"to\":\"a@example.com\"}'\n" +
			"  queue submit --queue reports --kind build --payload @job.json --delay 10m --tag nightly\n" +
			"  echo '{\"n\":1}' | queue submit --kind k --payload - --wait   # exits 0 only if the job is done\n" +
			"  queue submit --queue sync --kind account.sync --key acct-42 --payload '{\"full\":true}'\n" +
			"  queue submit --kind report.build --key doc-7 --unique-by key,kind --unique-for 10m\n" +
			"  queue submit --kind webhook.process --key repo-9 --debounce 30s --payload @event.json\n\n" +
			"A submission that --unique, --debounce or --throttle answers with a job stored before prints that job's id\n" +
			"(and says so on stderr; --json adds \"duplicate\": true). See docs/flow-control.md.",
		Flags: withFlags(serverFlags(), []cli.Flag{
			&cli.StringFlag{Name: "queue", Value: "default", Usage: "queue name", EnvVars: []string{"QUEUE_QUEUE"}},
			&cli.StringFlag{Name: "kind", Usage: "job kind (required)", EnvVars: []string{"QUEUE_KIND"}},
			&cli.StringFlag{Name: "payload", Usage: "JSON payload, @file to read a file, - to read stdin", EnvVars: []string{"QUEUE_PAYLOAD"}},
			&cli.IntFlag{Name: "priority", Usage: "-1000..1000, lower runs first", EnvVars: []string{"QUEUE_PRIORITY"}},
			&cli.StringFlag{Name: "delay", Usage: "run after this long (30s, 5m)", EnvVars: []string{"QUEUE_DELAY"}},
			&cli.TimestampFlag{Name: "run-at", Layout: time.RFC3339, Usage: "run at this time (RFC 3339)", EnvVars: []string{"QUEUE_RUN_AT"}},
			&cli.IntFlag{Name: "max-attempts", Usage: "1..1000 (default: the queue's, 5)", EnvVars: []string{"QUEUE_MAX_ATTEMPTS"}},
			&cli.StringFlag{Name: "timeout", Usage: "lease of one attempt (default: the queue's, 30s)", EnvVars: []string{"QUEUE_TIMEOUT"}},
			&cli.StringFlag{Name: "ttl", Usage: "cancel if not started within this long", EnvVars: []string{"QUEUE_TTL"}},
			&cli.StringSliceFlag{Name: "tag", Usage: "tag (repeatable)", EnvVars: []string{"QUEUE_TAGS"}},
			&cli.StringFlag{Name: "idempotency-key", Usage: "a repeat with the same key returns the first job", EnvVars: []string{"QUEUE_IDEMPOTENCY_KEY"}},
			&cli.StringFlag{Name: "key", Usage: "flow-control key (a customer, a document): the queue's key_concurrency, key_rate and fairness apply per key", EnvVars: []string{"QUEUE_KEY"}},
			&cli.BoolFlag{Name: "unique", Usage: "answer with a matching job instead of a new one: by default one of the same kind and payload (and key, if given) that is queued, scheduled or processing", EnvVars: []string{"QUEUE_UNIQUE"}},
			&cli.StringFlag{Name: "unique-by", Usage: "what a match shares: key, kind, payload, comma-separated (implies --unique)", EnvVars: []string{"QUEUE_UNIQUE_BY"}},
			&cli.StringFlag{Name: "unique-while", Usage: "the states a match may be in: queued, scheduled, processing, done, comma-separated (implies --unique)", EnvVars: []string{"QUEUE_UNIQUE_WHILE"}},
			&cli.StringFlag{Name: "unique-for", Usage: "a match counts if made within this long (10m; implies --unique; default: no bound)", EnvVars: []string{"QUEUE_UNIQUE_FOR"}},
			&cli.StringFlag{Name: "debounce", Usage: "run once this long after the last submission of the key and kind; a later one replaces the payload (needs --key)", EnvVars: []string{"QUEUE_DEBOUNCE"}},
			&cli.StringFlag{Name: "throttle", Usage: "keep the first job of the key and kind per this period and drop the rest (needs --key)", EnvVars: []string{"QUEUE_THROTTLE"}},
			&cli.BoolFlag{Name: "wait", Usage: "wait until the job is finished; exit 0 only if it is done"},
			jsonFlag(),
		}),
		Action: submit,
	}
}

// submit submits one job and prints its id (or the job, with --json); with
// --wait it prints the job once finished and exits 1 unless it is done.
func submit(c *cli.Context) error {
	in, err := submitInput(c)
	if err != nil {
		return err
	}
	cl := newClient(c)
	res, err := cl.Submit(c.Context, in)
	if err != nil {
		return remoteErr(c, err)
	}
	job := res.Job
	if res.Duplicate {
		fmt.Fprintf(c.App.ErrWriter, "%s\n", duplicateNote(in, job))
	}
	if c.Bool("wait") {
		if job, err = waitFinished(c, cl, job); err != nil {
			return err
		}
	}
	switch {
	case c.Bool("json") && res.Duplicate:
		printJSON(c.App.Writer, duplicateJSON{job})
	case c.Bool("json"):
		printJSON(c.App.Writer, job)
	default:
		fmt.Fprintln(c.App.Writer, job.ID)
	}
	if c.Bool("wait") && job.Status != app.StatusDone {
		msg := fmt.Sprintf("job %d ended %s", job.ID, job.Status)
		if job.DeadLetter != nil && job.DeadLetter.LastError != "" {
			msg += ": " + job.DeadLetter.LastError
		}
		return cli.Exit(msg, 1)
	}
	return nil
}

// submitInput is the job the flags of submit describe; a missing --kind,
// an argument, or a payload or duration that does not parse is a usage error.
func submitInput(c *cli.Context) (app.SubmitInput, error) {
	if c.NArg() > 0 {
		return app.SubmitInput{}, usagef("submit takes no arguments (got %q); give the payload with --payload", c.Args().First())
	}
	if c.String("kind") == "" {
		return app.SubmitInput{}, usagef("--kind is required, e.g. --kind email.send")
	}
	in := app.SubmitInput{Queue: c.String("queue"), Kind: c.String("kind"), Tags: c.StringSlice("tag"), IdempotencyKey: c.String("idempotency-key")}
	if p := c.String("payload"); p != "" {
		raw, err := readPayload(c, p)
		if err != nil {
			return in, err
		}
		in.Payload = raw
	}
	if c.IsSet("priority") {
		v := c.Int("priority")
		in.Priority = &v
	}
	if c.IsSet("max-attempts") {
		v := c.Int("max-attempts")
		in.MaxAttempts = &v
	}
	for _, d := range []struct {
		flag string
		dst  **app.Duration
	}{{"delay", &in.Delay}, {"timeout", &in.Timeout}, {"ttl", &in.TTL}} {
		var err error
		if *d.dst, err = durationFlag(c, d.flag); err != nil {
			return in, err
		}
	}
	if t := c.Timestamp("run-at"); t != nil {
		in.RunAt = t
	}
	return in, flowInput(c, &in)
}

// flowInput reads the flow-control flags of submit (--key, --unique...,
// --debounce, --throttle) into in; a combination the server refuses is a
// usage error here, naming the flags.
func flowInput(c *cli.Context, in *app.SubmitInput) error {
	in.Key = c.String("key")
	if len(in.Key) > app.MaxKeyLength {
		return usagef("--key is %d bytes; at most %d", len(in.Key), app.MaxKeyLength)
	}
	unique := c.Bool("unique") || c.IsSet("unique-by") || c.IsSet("unique-while") || c.IsSet("unique-for")
	if unique {
		u := &app.UniqueRule{By: splitList(c.String("unique-by")), While: splitList(c.String("unique-while"))}
		for _, b := range u.By {
			if b != "key" && b != "kind" && b != "payload" {
				return usagef("--unique-by %q: give key, kind or payload, comma-separated (e.g. --unique-by key,kind)", b)
			}
			if b == "key" && in.Key == "" {
				return usagef("--unique-by key needs the job's key: add --key")
			}
		}
		for _, w := range u.While {
			switch w {
			case "queued", "scheduled", "processing", "done":
			default:
				return usagef("--unique-while %q: give queued, scheduled, processing or done, comma-separated", w)
			}
		}
		d, err := durationFlag(c, "unique-for")
		if err != nil {
			return err
		}
		if d != nil {
			u.For = *d
		}
		in.Unique = u
	}
	var err error
	if in.Debounce, err = durationFlag(c, "debounce"); err != nil {
		return err
	}
	if in.Throttle, err = durationFlag(c, "throttle"); err != nil {
		return err
	}
	var rules []string
	for flag, set := range map[string]bool{"--unique": unique, "--debounce": in.Debounce != nil, "--throttle": in.Throttle != nil} {
		if set {
			rules = append(rules, flag)
		}
	}
	sort.Strings(rules)
	switch {
	case len(rules) > 1:
		return usagef("%s: give one of --unique, --debounce and --throttle", strings.Join(rules, " and "))
	case in.Debounce != nil && in.Key == "":
		return usagef("--debounce needs --key: it applies per key (and kind), e.g. --key repo-9 --debounce 30s")
	case in.Throttle != nil && in.Key == "":
		return usagef("--throttle needs --key: it applies per key (and kind), e.g. --key acct-42 --throttle 1m")
	case in.Debounce != nil && (in.Delay != nil || in.RunAt != nil):
		return usagef("--debounce sets when the job runs (that long after the last submission): drop --delay and --run-at")
	}
	return nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// duplicateNote says on stderr that a rule of in answered with job, a job
// stored before, instead of a new one.
func duplicateNote(in app.SubmitInput, job *app.Job) string {
	switch {
	case in.Debounce != nil:
		return fmt.Sprintf("job %d debounced: its payload replaced, it runs at %s (nothing new stored)", job.ID, app.FormatTime(job.RunAt))
	case in.Throttle != nil:
		return fmt.Sprintf("throttled: job %d already took this %s for key %q and kind %s; this one was dropped (nothing new stored)", job.ID, in.Throttle, job.Key, job.Kind)
	}
	return fmt.Sprintf("job %d matches (unique): nothing new stored", job.ID)
}

// duplicateJSON is a job that a unique, debounce or throttle rule answered
// with, as submit --json prints it: the job, and "duplicate": true.
type duplicateJSON struct{ job *app.Job }

func (d duplicateJSON) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(d.job)
	if err != nil || len(b) < 2 || b[len(b)-1] != '}' {
		return b, err
	}
	return append(b[:len(b)-1], `,"duplicate":true}`...), nil
}

// waitFinished waits, a long poll at a time, until job is done, cancelled
// or dead-lettered, and returns it as it ended.
func waitFinished(c *cli.Context, cl *client.Client, job *app.Job) (*app.Job, error) {
	id := job.ID
	for !job.Status.Terminal() && job.Status != app.StatusDeadLetter {
		var err error
		if job, err = cl.Get(c.Context, id, client.GetOptions{Wait: 60 * time.Second}); err != nil {
			return nil, remoteErr(c, err)
		}
	}
	return job, nil
}

func readPayload(c *cli.Context, p string) (json.RawMessage, error) {
	var raw []byte
	var err error
	switch {
	case p == "-":
		raw, err = io.ReadAll(io.LimitReader(c.App.Reader, app.MaxPayloadBytes+1))
	case strings.HasPrefix(p, "@"):
		raw, err = os.ReadFile(p[1:])
	default:
		raw = []byte(p)
	}
	if err != nil {
		return nil, fmt.Errorf("read payload: %w", err)
	}
	raw = []byte(strings.TrimSpace(string(raw)))
	if !json.Valid(raw) {
		return nil, usagef("--payload is not valid JSON (quote strings: --payload '\"text\"')")
	}
	return raw, nil
}

func jobsCommand() *cli.Command {
	return &cli.Command{
		Name:      "jobs",
		Usage:     "list, show and cancel jobs; retry, reschedule and re-prioritise them in bulk",
		UsageText: "queue jobs list|show|cancel|retry|reschedule|prioritize\n\nExamples:\n  queue jobs list --queue default --status queued\n  queue jobs list --payload customer=42\n  queue jobs show 42\n  queue jobs cancel 42\n  queue jobs retry --queue emails --error timeout",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list jobs, newest first",
				UsageText: "queue jobs list [--queue Q] [--kind K] [--status S] [--tag T] [--key K] [--workflow ID] [--replayed-from ID] [--payload PATH=VALUE]...\n" +
					"                [--error TEXT] [--created-after T] [--created-before T] [--run-after T] [--run-before T] [--finished-after T] [--finished-before T] [--limit N]\n\n" +
					"Without --status it lists queued, processing, done and cancelled jobs; dead-lettered jobs live in the\n" +
					"dead-letter queue: --status dead_letter (or `queue dlq list`) lists them. KEY shows a job's flow-control\n" +
					"key, with \"(waiting)\" while the job is held back until its key has room.\n\n" +
					"Examples:\n  queue jobs list --status scheduled --json\n  queue jobs list --status dead_letter\n  queue jobs list --queue sync --key acct-42",
				Flags: withFlags(serverFlags(), []cli.Flag{
					&cli.StringFlag{Name: "queue"}, &cli.StringFlag{Name: "kind"}, &cli.StringFlag{Name: "tag"},
					&cli.StringFlag{Name: "status", Usage: "queued, scheduled, retrying, processing, done, cancelled or dead_letter"},
					&cli.IntFlag{Name: "workflow", Usage: "only the jobs of this workflow's released steps"},
					&cli.IntFlag{Name: "replayed-from", Usage: "only the jobs replayed from this dead-letter row"},
					&cli.StringFlag{Name: "key", Usage: "only the jobs of this flow-control key"},
					&cli.IntFlag{Name: "limit", Value: 50}, &cli.StringFlag{Name: "cursor", Usage: "next_cursor of the previous page"},
					jsonFlag(),
				}, liveFilterFlags()),
				Action: jobsList,
			},
			{
				Name:      "show",
				Usage:     "show one job",
				UsageText: "queue jobs show ID [--events] [--json]\n\nExamples:\n  queue jobs show 42\n  queue jobs show 42 --events\n  queue jobs show 42 --json",
				Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag(), &cli.BoolFlag{Name: "events", Usage: "include the job's lifecycle events (submitted, started, retried, ...)"}}),
				Action:    jobsShow,
			},
			liveCommand(app.LiveCancel), // jobs_live.go: an ID, or filters
			liveCommand(app.LiveRetry),
			liveCommand(app.LiveReschedule),
			liveCommand(app.LivePrioritize),
			jobsLogsCommand(), // logs.go
		},
	}
}

// jobsList prints a page of jobs, newest first.
func jobsList(c *cli.Context) error {
	q, err := jobQuery(c)
	if err != nil {
		return err
	}
	page, err := newClient(c).List(c.Context, client.ListOptions{Queue: c.String("queue"), Kind: c.String("kind"),
		Status: c.String("status"), Tag: c.String("tag"), Key: c.String("key"), Workflow: int64(c.Int("workflow")), ReplayedFrom: int64(c.Int("replayed-from")),
		Query: q, Limit: c.Int("limit"), Cursor: c.String("cursor")})
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, page)
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "ID\tQUEUE\tKIND\tSTATUS\tATTEMPTS\tRUN AT\tCREATED\tKEY")
	for _, j := range page.Jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.Queue, j.Kind, j.Status, j.Attempts, j.MaxAttempts, age(j.RunAt), age(j.CreatedAt), keyText(j))
	}
	tw.Flush()
	if page.NextCursor != "" {
		fmt.Fprintf(c.App.ErrWriter, "more: --cursor %s\n", page.NextCursor)
	}
	if c.String("status") == "" && c.String("cursor") == "" && !c.Bool("json") { // a person reads the hint, a script would pay its request
		hintDeadLetters(c)
	}
	return nil
}

// hintDeadLetters says on stderr how to see dead-lettered jobs when a list
// without --status leaves some out (they live in the dead-letter queue, not
// among the jobs; see docs/concepts.md).
func hintDeadLetters(c *cli.Context) {
	dead, err := newClient(c).ListDead(c.Context, client.DeadListOptions{Queue: c.String("queue"), Kind: c.String("kind"), Tag: c.String("tag"), Limit: 1})
	if err != nil || len(dead.Jobs) == 0 {
		return
	}
	fmt.Fprintln(c.App.ErrWriter, "dead-lettered jobs are not listed without --status: see them with `queue jobs list --status dead_letter` or `queue dlq list`")
}

// jobsShow prints one job, with its lifecycle events when --events asks.
func jobsShow(c *cli.Context) error {
	id, err := idArg(c, "job")
	if err != nil {
		return err
	}
	job, err := newClient(c).Get(c.Context, id, client.GetOptions{Events: c.Bool("events")})
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, job)
	}
	printJob(c.App.Writer, job)
	return nil
}

// jobsCancel cancels a queued job, or asks the worker of a running one to stop it.
func jobsCancel(c *cli.Context) error {
	id, err := idArg(c, "job")
	if err != nil {
		return err
	}
	job, err := newClient(c).Cancel(c.Context, id)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, job)
	}
	if job.Status == app.StatusProcessing {
		fmt.Fprintf(c.App.Writer, "job %d: cancel requested; its worker stops it at the next heartbeat\n", id)
	} else {
		fmt.Fprintf(c.App.Writer, "job %d: cancelled\n", id)
	}
	return nil
}

// keyText is a job's key in a table: "-" without one, and "(waiting)"
// after it while the job is held back until its key has room.
func keyText(j *app.Job) string {
	switch {
	case j.Key == "":
		return "-"
	case j.Held:
		return j.Key + " (waiting)"
	}
	return j.Key
}

func printJob(w io.Writer, j *app.Job) {
	tw := table(w)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("id", j.ID)
	row("queue", j.Queue)
	row("kind", j.Kind)
	if j.Held {
		row("status", string(j.Status)+", waiting for its key (held back until key "+strconv.Quote(j.Key)+" has room under the queue's key limits)")
	} else {
		row("status", j.Status)
	}
	if j.Key != "" {
		row("key", j.Key)
	}
	row("priority", j.Priority)
	row("attempts", fmt.Sprintf("%d of %d", j.Attempts, j.MaxAttempts))
	row("run_at", app.FormatTime(j.RunAt)+" ("+age(j.RunAt)+")")
	row("created_at", app.FormatTime(j.CreatedAt))
	if j.FinishedAt != nil {
		row("finished_at", app.FormatTime(*j.FinishedAt))
	}
	if j.ProgressPercent != nil {
		row("progress", progressText(j)) // logs.go
	}
	if len(j.Tags) > 0 {
		row("tags", strings.Join(j.Tags, ", "))
	}
	if j.CancelReason != "" {
		row("cancel_reason", j.CancelReason)
	}
	if j.ReplayedFrom != nil {
		row("replayed_from", *j.ReplayedFrom)
	}
	row("payload", string(j.Payload))
	if len(j.Result) > 0 && string(j.Result) != "null" {
		row("result", string(j.Result))
	}
	if j.DeadLetter != nil {
		row("dead_letter_reason", j.DeadLetter.Reason)
		row("moved_at", app.FormatTime(j.DeadLetter.MovedAt))
		row("resurrections", j.DeadLetter.ResurrectionCount)
	}
	tw.Flush()
	for _, e := range j.Errors {
		fmt.Fprintf(w, "error (attempt %d, %s): %s\n", e.Attempt, app.FormatTime(e.At), e.Error)
	}
	for _, e := range j.Events {
		fmt.Fprintf(w, "event %s %s %s\n", app.FormatTime(e.At), e.Type, string(e.Data))
	}
}

func queuesCommand() *cli.Command {
	oneQueue := func(name, usage string, flags []cli.Flag, fn func(c *cli.Context, cl *client.Client, q string) error) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     usage,
			UsageText: "queue queues " + name + " QUEUE\n\nExample:\n  queue queues " + name + " emails",
			Flags:     withFlags(serverFlags(), flags),
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usagef("give one queue name, e.g. `queue queues %s default`", name)
				}
				return fn(c, newClient(c), c.Args().First())
			},
		}
	}
	drain := oneQueue("drain", "cancel every queued job of the queue (running jobs finish); asks first",
		[]cli.Flag{jsonFlag(),
			&cli.BoolFlag{Name: "dry-run", Usage: "only count the queued jobs it would cancel"},
			&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask to confirm (needed when stdin is not a terminal)"}},
		queuesDrain)
	drain.UsageText = "queue queues drain QUEUE [--dry-run] [--yes]\n\n" +
		"Asks on a terminal before it cancels; elsewhere (cron, CI, a pipe) it needs --yes.\n\n" +
		"Examples:\n  queue queues drain emails\n  queue queues drain emails --dry-run\n  queue queues drain emails --yes"
	keys := oneQueue("keys", "show the queue's keys: those holding jobs back at their limit, and the busiest",
		[]cli.Flag{jsonFlag(), &cli.IntFlag{Name: "top", Value: app.DefaultKeyStatsLimit, Usage: fmt.Sprintf("keys in each list, 1 to %d", app.MaxKeyStatsLimit)}}, queuesKeys)
	keys.UsageText = "queue queues keys QUEUE [--top N] [--json]\n\n" +
		"Shows the queue's key limits (key_concurrency, key_rate, fairness), how many of its jobs wait for their\n" +
		"key to have room, the keys holding jobs back (most first) and the keys with the most jobs queued or\n" +
		"processing (among the first 100,000 keyed jobs). See docs/flow-control.md.\n\n" +
		"Examples:\n  queue queues keys sync\n  queue queues keys sync --top 5 --json"
	return &cli.Command{
		Name:      "queues",
		Usage:     "list, pause, resume and drain queues, show their keys, and show and change their settings",
		UsageText: "queue queues list|pause|resume|drain|keys|settings|set|reset\n\nExamples:\n  queue queues list\n  queue queues pause emails\n  queue queues keys sync\n  queue queues set emails concurrency=3",
		Subcommands: append([]*cli.Command{
			{
				Name:      "list",
				Usage:     "list queues with their state and policy",
				UsageText: "queue queues list [--json]\n\nExample:\n  queue queues list",
				Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action:    queuesList,
			},
			oneQueue("pause", "stop handing out the queue's jobs (submissions still land)", nil, func(c *cli.Context, cl *client.Client, q string) error {
				if err := cl.SetPaused(c.Context, q, true); err != nil {
					return remoteErr(c, err)
				}
				fmt.Fprintf(c.App.Writer, "queue %s paused\n", q)
				return nil
			}),
			oneQueue("resume", "hand out the queue's jobs again", nil, func(c *cli.Context, cl *client.Client, q string) error {
				if err := cl.SetPaused(c.Context, q, false); err != nil {
					return remoteErr(c, err)
				}
				fmt.Fprintf(c.App.Writer, "queue %s resumed\n", q)
				return nil
			}),
			drain,
			keys,
		}, queuesSettingsCommands()...), // settings.go
	}
}

// queuesKeys prints the keys of queue q: its key limits, the jobs held
// back, the keys at their limit and the busiest keys.
func queuesKeys(c *cli.Context, cl *client.Client, q string) error {
	if n := c.Int("top"); n < 1 || n > app.MaxKeyStatsLimit {
		return usagef("--top %d: want 1 to %d keys in each list", n, app.MaxKeyStatsLimit)
	}
	st, err := cl.QueueKeys(c.Context, q, c.Int("top"))
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, st)
	}
	w := c.App.Writer
	l := st.Limits
	rate, _ := app.ParseKeyRate(l.KeyRate)
	limits := keyLimitsText(app.QueueConfig{KeyConcurrency: l.KeyConcurrency, KeyRate: rate, Fairness: l.Fairness})
	if limits == "-" {
		limits = "none (its keyed jobs run as plain jobs; set key_concurrency, key_rate or fairness under [queues." + q + "])"
	}
	fmt.Fprintf(w, "queue %s: per key %s\n", q, limits)
	fmt.Fprintf(w, "%s waiting for their key\n", plural(st.Held, "job"))
	for _, list := range []struct {
		title string
		keys  []app.KeyCount
	}{{"at their limit, holding jobs back", st.AtLimit}, {"busiest", st.Busiest}} {
		fmt.Fprintf(w, "\nkeys %s:\n", list.title)
		if len(list.keys) == 0 {
			fmt.Fprintln(w, "  (none)")
			continue
		}
		tw := table(w)
		fmt.Fprintln(tw, "KEY\tQUEUED\tPROCESSING\tWAITING")
		for _, k := range list.keys {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", k.Key, k.Queued, k.Processing, k.Held)
		}
		tw.Flush()
	}
	return nil
}

// keyLimitsText writes the key limits of a queue's policy ("-": none).
func keyLimitsText(q app.QueueConfig) string {
	var parts []string
	if q.KeyConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("%d at once", q.KeyConcurrency))
	}
	if q.KeyRate.N > 0 {
		parts = append(parts, q.KeyRate.String())
	}
	if q.Fairness != "" {
		parts = append(parts, q.Fairness)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// queuesList prints the queues with their state and policy.
func queuesList(c *cli.Context) error {
	qs, err := newClient(c).Queues(c.Context)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"queues": qs})
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "QUEUE\tSTATE\tMAX ATTEMPTS\tTIMEOUT\tCONCURRENCY\tRATE\tMAX QUEUED\tPER KEY")
	for _, q := range qs {
		state := "active"
		if q.Paused {
			state = "paused"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", q.Name, state, q.Config.MaxAttempts, q.Config.Timeout,
			limitText(float64(q.Config.Concurrency)), limitText(q.Config.Rate), limitText(float64(q.Config.MaxQueued)), keyLimitsText(q.Config))
	}
	return tw.Flush()
}

// queuesDrain cancels the queued jobs of q after confirmCount's rule: it
// counts them first (a dry run) unless --yes or --dry-run says not to ask.
func queuesDrain(c *cli.Context, cl *client.Client, q string) error {
	if !c.Bool("dry-run") && !c.Bool("yes") {
		dry, err := cl.Drain(c.Context, q, true)
		if err != nil {
			return remoteErr(c, err)
		}
		ok, err := confirmCount(c, dry.Count, "cancel "+plural(dry.Count, "queued job")+" of queue "+q,
			"nothing to drain: queue "+q+" holds no queued job")
		if !ok {
			return err
		}
	}
	res, err := cl.Drain(c.Context, q, c.Bool("dry-run"))
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, res)
	}
	verb := "cancelled"
	if res.DryRun {
		verb = "would cancel"
	}
	fmt.Fprintf(c.App.Writer, "queue %s: %s %s\n", q, verb, plural(res.Count, "queued job"))
	return nil
}

func limitText(v float64) string {
	if v == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func statsCommand() *cli.Command {
	return &cli.Command{
		Name:      "stats",
		Usage:     "job counts per queue",
		UsageText: "queue stats [--json] [--watch]\n\nExamples:\n  queue stats\n  queue stats --watch 2s",
		Flags: withFlags(serverFlags(), []cli.Flag{jsonFlag(),
			&cli.DurationFlag{Name: "watch", Usage: "refresh in place at this interval (e.g. 2s) until Ctrl-C"}}),
		Action: func(c *cli.Context) error {
			cl := newClient(c)
			watch := c.Duration("watch")
			for {
				st, err := cl.Stats(c.Context)
				if err != nil {
					return remoteErr(c, err)
				}
				if c.Bool("json") {
					printJSON(c.App.Writer, st)
				} else {
					if watch > 0 {
						fmt.Fprint(c.App.Writer, "\x1b[H\x1b[2J") // home, clear
					}
					printStats(c.App.Writer, st)
				}
				if watch <= 0 {
					return nil
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(watch):
				}
			}
		},
	}
}

func printStats(w io.Writer, st *client.Stats) {
	tw := table(w)
	fmt.Fprintln(tw, "QUEUE\tQUEUED\tSCHEDULED\tPROCESSING\tDONE\tCANCELLED\tDEAD LETTER\tTOTAL\tOLDEST\tDONE/MIN\tFAILED/MIN")
	names := make([]string, 0, len(st.Queues))
	for n := range st.Queues {
		names = append(names, n)
	}
	sort.Strings(names)
	row := func(name string, q app.QueueStats) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\n", name, q.Queued, q.Scheduled, q.Processing, q.Done,
			q.Cancelled, q.DeadLetter, q.Total, (time.Duration(q.OldestQueuedAge) * time.Second).String(), q.CompletedLastMinute, q.FailedLastMinute)
	}
	for _, n := range names {
		row(n, st.Queues[n])
	}
	row("(total)", st.Total)
	tw.Flush()
}

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:      "audit",
		Usage:     "list admin actions, newest first",
		UsageText: "queue audit [--limit N] [--json]\n\nExample:\n  queue audit --limit 20",
		Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag(), &cli.IntFlag{Name: "limit", Value: 50}}),
		Action: func(c *cli.Context) error {
			entries, err := newClient(c).Audit(c.Context, c.Int("limit"))
			if err != nil {
				return remoteErr(c, err)
			}
			if c.Bool("json") {
				return printJSON(c.App.Writer, map[string]any{"entries": entries})
			}
			tw := table(c.App.Writer)
			fmt.Fprintln(tw, "WHEN\tWHO\tACTION\tTARGET\tFILTER\tCOUNT")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", app.FormatTime(e.At), e.Actor, e.Action, e.Target, string(e.Filter), e.Count)
			}
			return tw.Flush()
		},
	}
}

// durationFlag reads duration flag name (7d, 90s), nil if not given; a bad
// value is a usage error naming the flag.
func durationFlag(c *cli.Context, name string) (*app.Duration, error) {
	v := c.String(name)
	if v == "" {
		return nil, nil
	}
	d, err := app.ParseDuration(v)
	if err != nil {
		return nil, usagef("--%s: %v", name, err)
	}
	ad := app.Duration(d)
	return &ad, nil
}
