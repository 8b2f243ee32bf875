package commands

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
)

func filterFlags(reason bool) []cli.Flag {
	fl := []cli.Flag{
		&cli.StringFlag{Name: "queue", Usage: "only this queue"},
		&cli.StringFlag{Name: "kind", Usage: "only this kind"},
		&cli.StringFlag{Name: "tag", Usage: "only jobs with this tag"},
	}
	if reason {
		fl = append(fl, &cli.StringFlag{Name: "reason", Usage: "max_attempts, permanent_failure, lease_expired or admin_move"})
	}
	return fl
}

func bulkFlags(extra ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.BoolFlag{Name: "all", Usage: "act on every row (needed when no filter is given)"},
		&cli.BoolFlag{Name: "dry-run", Usage: "only count, and show a sample"},
		&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask to confirm"},
		jsonFlag(),
	}, extra...)
}

func dlqCommand() *cli.Command {
	return &cli.Command{
		Name:  "dlq",
		Usage: "the dead-letter queue: list, show, stats, export, replay, purge, move",
		UsageText: "queue dlq list|show|stats|export|replay|purge|move\n\nExamples:\n  queue dlq list --queue emails\n  queue dlq replay 42\n" +
			"  queue dlq replay --queue emails --rate 10\n  queue dlq purge --older-than 7d --all\n  queue dlq move --queue broken --yes",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list dead-letter rows, the newest move first",
				UsageText: "queue dlq list [--queue Q] [--kind K] [--tag T] [--reason R] [--moved-after T] [--moved-before T] [--replayed true|false] [--limit N] [--json]\n\n" +
					"Example:\n  queue dlq list --reason max_attempts --replayed false",
				Flags:  withFlags(serverFlags(), filterFlags(true), listFlags(), []cli.Flag{&cli.IntFlag{Name: "limit", Value: 50}, &cli.StringFlag{Name: "cursor"}, jsonFlag()}),
				Action: dlqList,
			},
			{
				Name:      "stats",
				Usage:     "count dead-letter rows by queue, kind, reason and day",
				UsageText: "queue dlq stats [--json]\n\nExample:\n  queue dlq stats --json",
				Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action:    dlqStats,
			},
			{
				Name:  "export",
				Usage: "write every matching dead-letter row as JSON lines or CSV",
				UsageText: "queue dlq export [--queue Q] [--kind K] [--tag T] [--reason R] [--moved-after T] [--moved-before T] [--replayed true|false] [--format jsonl|csv] [--out FILE]\n\n" +
					"Example:\n  queue dlq export --queue emails --format csv --out emails-dlq.csv",
				Flags: withFlags(serverFlags(), filterFlags(true), listFlags(), []cli.Flag{
					&cli.StringFlag{Name: "format", Value: "jsonl", Usage: "jsonl (one row per line) or csv"},
					&cli.StringFlag{Name: "out", Usage: "write to this file (default: stdout)"},
				}),
				Action: dlqExport,
			},
			{
				Name:      "show",
				Usage:     "show one dead-letter row",
				UsageText: "queue dlq show ID [--json]\n\nExample:\n  queue dlq show 42",
				Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action:    dlqShow,
			},
			{
				Name:  "replay",
				Usage: "put dead-letter rows back as fresh jobs (the rows stay, counted)",
				UsageText: "queue dlq replay ID [--delay D | --run-at T] [--to-queue Q] [--priority P] [--max-attempts N] [--payload JSON | --payload-patch JSON] [--idempotency-key K]\n" +
					"queue dlq replay (--queue Q | --kind K | --tag T | --all) [--reason R] [--include-replayed] [--to-queue Q] [--priority P] [--max-attempts N] [--rate N] [--dry-run]\n\n" +
					"Examples:\n  queue dlq replay 42\n  queue dlq replay 42 --delay 10m --max-attempts 10\n  queue dlq replay 42 --payload-patch '{\"retries\":null}'\n  queue dlq replay --queue emails --rate 5",
				Flags: withFlags(serverFlags(), filterFlags(true), bulkFlags(
					&cli.StringFlag{Name: "delay", Usage: "run the new jobs after this long"},
					&cli.TimestampFlag{Name: "run-at", Layout: time.RFC3339, Usage: "run the new jobs at this time"},
					&cli.Float64Flag{Name: "rate", Usage: "bulk: spread the new jobs at this many per second"},
					&cli.StringFlag{Name: "to-queue", Usage: "put the new jobs in this queue"},
					&cli.IntFlag{Name: "priority", Usage: "give the new jobs this priority"},
					&cli.IntFlag{Name: "max-attempts", Usage: "give the new jobs this many attempts"},
					&cli.StringFlag{Name: "payload", Usage: "one row: replace the payload with this JSON"},
					&cli.StringFlag{Name: "payload-patch", Usage: "one row: change the payload with this JSON merge patch"},
					&cli.StringFlag{Name: "idempotency-key", Usage: "one row: a retry of this replay with the same key makes no second job"},
					&cli.BoolFlag{Name: "include-replayed", Usage: "bulk: replay rows replayed before too"},
				)),
				Action: func(c *cli.Context) error { return dlqAction(c, app.BulkReplay) },
			},
			{
				Name:  "purge",
				Usage: "delete dead-letter rows",
				UsageText: "queue dlq purge ID\nqueue dlq purge (--queue Q | --kind K | --tag T | --all) [--reason R] [--older-than D] [--dry-run] [--yes]\n\n" +
					"Examples:\n  queue dlq purge 42\n  queue dlq purge --queue emails --older-than 7d",
				Flags:  withFlags(serverFlags(), filterFlags(true), bulkFlags(&cli.StringFlag{Name: "older-than", Usage: "only rows moved longer ago than this (7d, 12h)"})),
				Action: func(c *cli.Context) error { return dlqAction(c, app.BulkPurge) },
			},
			{
				Name:  "move",
				Usage: "move jobs into the dead-letter queue (reason admin_move)",
				UsageText: "queue dlq move ID [--note TEXT]\nqueue dlq move (--queue Q | --kind K | --tag T | --all) [--status S]... [--note TEXT] [--dry-run] [--yes]\n\n" +
					"A job named by id moves from queued, scheduled or cancelled; a filter takes queued and scheduled jobs\n(--status cancelled widens it). --note (or --reason) is your text, kept on the row.\n\n" +
					"Examples:\n  queue dlq move 42 --note 'bad customer data'\n  queue dlq move --queue broken --kind import",
				Flags: withFlags(serverFlags(), filterFlags(false), bulkFlags(
					&cli.StringFlag{Name: "note", Aliases: []string{"reason"}, Usage: "why: kept on the dead-letter rows as their note"},
					&cli.StringSliceFlag{Name: "status", Usage: "queued, scheduled or cancelled (repeat for several)"},
				)),
				Action: func(c *cli.Context) error { return dlqAction(c, app.BulkMove) },
			},
		},
	}
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// dlqList prints a page of dead-letter rows, newest first.
func dlqList(c *cli.Context) error {
	o, err := deadListOptions(c)
	if err != nil {
		return err
	}
	o.Limit, o.Cursor = c.Int("limit"), c.String("cursor")
	page, err := newClient(c).ListDead(c.Context, o)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, page)
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "ID\tQUEUE\tKIND\tREASON\tATTEMPTS\tMOVED\tREPLAYS\tLAST ERROR")
	for _, d := range page.Jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%d\t%s\n", d.ID, d.Queue, d.Kind, d.Reason, d.Attempts, d.MaxAttempts,
			age(d.MovedAt), d.ResurrectionCount, app.TruncateString(firstLine(d.LastError), 60))
	}
	tw.Flush()
	if page.NextCursor != "" {
		fmt.Fprintf(c.App.ErrWriter, "more: --cursor %s\n", page.NextCursor)
	}
	return nil
}

// dlqShow prints one dead-letter row.
func dlqShow(c *cli.Context) error {
	id, err := idArg(c, "dead-letter")
	if err != nil {
		return err
	}
	d, err := newClient(c).GetDead(c.Context, id)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, d)
	}
	printJob(c.App.Writer, d.AsJob())
	return nil
}

// dlqAction runs replay, purge or move (action is app.BulkReplay, BulkPurge
// or BulkMove): on the one dead-letter row an argument names, or on what the
// filter flags pick, after a confirmation where the action destroys.
func dlqAction(c *cli.Context, action string) error {
	when, err := replayWhen(c, action)
	if err != nil {
		return err
	}
	if c.NArg() > 0 {
		return dlqOne(c, action, when)
	}
	in, err := bulkInput(c, action, when)
	if err != nil {
		return err
	}
	cl := newClient(c)
	if ok, err := confirmBulk(c, cl, action, &in); !ok {
		return err
	}
	res, err := cl.Bulk(c.Context, action, in)
	if err != nil {
		return remoteErr(c, err)
	}
	return printBulk(c, action, res)
}

// replayWhen reads when the new jobs of a replay run (--delay, --run-at);
// other actions have no such flags.
func replayWhen(c *cli.Context, action string) (app.ReplayInput, error) {
	var in app.ReplayInput
	if action != app.BulkReplay {
		return in, nil
	}
	var err error
	in.Delay, err = durationFlag(c, "delay")
	in.RunAt = c.Timestamp("run-at")
	return in, err
}

// dlqOne replays or purges the dead-letter row the argument names. Move
// takes queued jobs by filter only.
func dlqOne(c *cli.Context, action string, when app.ReplayInput) error {
	what := "dead-letter"
	if action == app.BulkMove {
		what = "job"
	}
	id, err := idArg(c, what)
	if err != nil {
		return err
	}
	cl := newClient(c)
	if action == app.BulkMove {
		res, err := cl.Bulk(c.Context, action, app.BulkInput{IDs: []int64{id}, Note: c.String("note")})
		if err != nil {
			return remoteErr(c, err)
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, res)
		}
		fmt.Fprintf(c.App.Writer, "job %d moved to the dead-letter queue\n", id)
		return nil
	}
	if action == app.BulkReplay {
		if when.ReplayOverride, err = replayOverride(c, true); err != nil {
			return err
		}
		when.IdempotencyKey = c.String("idempotency-key")
		job, err := cl.Replay(c.Context, id, when)
		if err != nil {
			return remoteErr(c, err)
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, job)
		}
		fmt.Fprintf(c.App.Writer, "dead-letter row %d replayed as job %d\n", id, job.ID)
		return nil
	}
	if err := cl.Purge(c.Context, id); err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"count": 1})
	}
	fmt.Fprintf(c.App.Writer, "dead-letter row %d purged\n", id)
	return nil
}

// bulkInput is a bulk action's filter from its flags. Without --queue,
// --kind, --tag or --all it is a usage error naming them (--reason and
// --older-than only narrow), so a forgotten flag never acts on everything.
func bulkInput(c *cli.Context, action string, when app.ReplayInput) (app.BulkInput, error) {
	in := app.BulkInput{Queue: c.String("queue"), Kind: c.String("kind"), Tag: c.String("tag"), AllowAll: c.Bool("all"), DryRun: c.Bool("dry-run")}
	switch action {
	case app.BulkReplay:
		in.Reason, in.IncludeReplayed = c.String("reason"), c.Bool("include-replayed")
		in.Rate, in.RunAt, in.Delay = c.Float64("rate"), when.RunAt, when.Delay
		o, err := replayOverride(c, false)
		if err != nil {
			return in, err
		}
		if o.Queue != "" || o.Priority != nil || o.MaxAttempts != nil {
			in.Set = &o
		}
	case app.BulkPurge:
		in.Reason = c.String("reason")
		var err error
		if in.OlderThan, err = durationFlag(c, "older-than"); err != nil {
			return in, err
		}
	case app.BulkMove:
		in.Note, in.Statuses = c.String("note"), c.StringSlice("status")
	}
	if in.Queue == "" && in.Kind == "" && in.Tag == "" && !in.AllowAll {
		return in, usagef("dlq %s needs --queue, --kind or --tag, or --all to act on everything (--reason and --older-than only narrow)", action)
	}
	return in, nil
}

// replayOverride reads what a replay changes (--to-queue, --priority,
// --max-attempts; on one row also --payload or --payload-patch).
func replayOverride(c *cli.Context, one bool) (app.ReplayOverride, error) {
	o := app.ReplayOverride{Queue: c.String("to-queue")}
	if c.IsSet("priority") {
		p := c.Int("priority")
		o.Priority = &p
	}
	if c.IsSet("max-attempts") {
		n := c.Int("max-attempts")
		o.MaxAttempts = &n
	}
	for name, dst := range map[string]*json.RawMessage{"payload": &o.Payload, "payload-patch": &o.PayloadPatch} {
		if v := c.String(name); v != "" {
			if !one {
				return o, usagef("--%s changes one row's payload: give an ID", name)
			}
			if !json.Valid([]byte(v)) {
				return o, usagef("--%s is not valid JSON", name)
			}
			*dst = json.RawMessage(v)
		}
	}
	return o, nil
}

// listFlags are the DLQ list's filters beyond the bulk ones.
func listFlags() []cli.Flag {
	return []cli.Flag{
		&cli.TimestampFlag{Name: "moved-after", Layout: time.RFC3339, Usage: "only rows moved at or after this time"},
		&cli.TimestampFlag{Name: "moved-before", Layout: time.RFC3339, Usage: "only rows moved before this time"},
		&cli.StringFlag{Name: "replayed", Usage: "true: only rows replayed before; false: only rows never replayed"},
	}
}

// deadListOptions reads the DLQ list's filters.
func deadListOptions(c *cli.Context) (client.DeadListOptions, error) {
	o := client.DeadListOptions{Queue: c.String("queue"), Kind: c.String("kind"), Tag: c.String("tag"), Reason: c.String("reason"),
		MovedAfter: c.Timestamp("moved-after"), MovedBefore: c.Timestamp("moved-before")}
	if v := c.String("replayed"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return o, usagef("--replayed takes true or false, not %q", v)
		}
		o.Replayed = &b
	}
	return o, nil
}

// dlqStats prints the DLQ's counts.
func dlqStats(c *cli.Context) error {
	st, err := newClient(c).DeadStats(c.Context)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, st)
	}
	if st.Total == 0 {
		fmt.Fprintln(c.App.Writer, "the dead-letter queue is empty")
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%d rows, the oldest moved %s ago; %d replayed (%d replays)\n", st.Total,
		(time.Duration(st.OldestAge) * time.Second).String(), st.Replayed, st.Replays)
	tw := table(c.App.Writer)
	for _, by := range []struct {
		name string
		m    map[string]int64
	}{{"QUEUE", st.ByQueue}, {"KIND", st.ByKind}, {"REASON", st.ByReason}, {"DAY", st.ByDay}} {
		keys := slices.Sorted(maps.Keys(by.m))
		for _, k := range keys {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", by.name, k, by.m[k])
		}
	}
	return tw.Flush()
}

// dlqExport writes every dead-letter row matching the filters, page by
// page, as JSON lines or CSV (app.DeadCSVColumns), counting on stderr as it
// goes. A write that fails (a full disk) fails the export: a cut-off file
// never passes for a whole one.
func dlqExport(c *cli.Context) (err error) {
	o, err := deadListOptions(c)
	if err != nil {
		return err
	}
	format := c.String("format")
	if format != "jsonl" && format != "csv" {
		return usagef("--format is jsonl or csv, not %q", format)
	}
	out := c.App.Writer
	if path := c.String("out"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // rows hold payloads
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer func() {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("export: %w", cerr)
			}
		}()
		out = f
	}
	w := bufio.NewWriter(out)
	cw := csv.NewWriter(w)
	if format == "csv" {
		cw.Write(app.DeadCSVColumns)
	}
	cl, n := newClient(c), 0
	for o.Limit = 1000; ; {
		page, err := cl.ListDead(c.Context, o)
		if err != nil {
			return remoteErr(c, err)
		}
		for _, d := range page.Jobs {
			if format == "csv" {
				cw.Write(d.CSVRecord())
				continue
			}
			b, err := json.Marshal(d)
			if err != nil {
				return fmt.Errorf("export row %d: %w", d.ID, err)
			}
			w.Write(append(b, '\n'))
		}
		if cw.Flush(); cw.Error() != nil {
			return fmt.Errorf("export: %w", cw.Error())
		}
		n += len(page.Jobs)
		fmt.Fprintf(c.App.ErrWriter, "exported %d rows\r", n)
		if o.Cursor = page.NextCursor; o.Cursor == "" {
			break
		}
	}
	fmt.Fprintln(c.App.ErrWriter)
	if err := w.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// confirmBulk counts what a purge or a move would touch (a dry run) and
// asks as confirmCount does; it reports whether to go ahead. A dry run, and
// a replay (which destroys nothing), go ahead without asking.
func confirmBulk(c *cli.Context, cl *client.Client, action string, in *app.BulkInput) (bool, error) {
	if in.DryRun || c.Bool("yes") || (action != app.BulkPurge && action != app.BulkMove) {
		return true, nil
	}
	dry := *in
	dry.DryRun = true
	res, err := cl.Bulk(c.Context, action, dry)
	if err != nil {
		return false, remoteErr(c, err)
	}
	in.Bound = res.Bound // the confirmed call acts on what was counted, not on rows that come meanwhile
	what := "purge " + plural(res.Count, "dead-letter row")
	none := "nothing to purge: no dead-letter row matches"
	if action == app.BulkMove {
		what = "move " + plural(res.Count, "job") + " to the dead-letter queue"
		none = "nothing to move: no job matches"
	}
	return confirmCount(c, res.Count, what, none)
}

// printBulk prints what a bulk action did, or what it would have done and a
// sample of it after a dry run.
func printBulk(c *cli.Context, action string, res *app.BulkResult) error {
	if c.Bool("json") {
		return printJSON(c.App.Writer, res)
	}
	verb := map[string]string{app.BulkReplay: "replayed", app.BulkPurge: "purged", app.BulkMove: "moved"}[action]
	if !res.DryRun {
		fmt.Fprintf(c.App.Writer, "%s %d\n", verb, res.Count)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "would have %s %d\n", verb, res.Count)
	for _, d := range res.Sample {
		fmt.Fprintf(c.App.Writer, "  %d %s %s %s\n", d.ID, d.Queue, d.Kind, d.Reason)
	}
	for _, j := range res.Jobs {
		fmt.Fprintf(c.App.Writer, "  %d %s %s\n", j.ID, j.Queue, j.Kind)
	}
	return nil
}
