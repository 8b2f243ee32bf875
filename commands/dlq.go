package commands

import (
	"fmt"
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
		Usage: "the dead-letter queue: list, show, replay, purge, move",
		UsageText: "queue dlq list|show|replay|purge|move\n\nExamples:\n  queue dlq list --queue emails\n  queue dlq replay 42\n" +
			"  queue dlq replay --queue emails --rate 10\n  queue dlq purge --older-than 7d --all\n  queue dlq move --queue broken --yes",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list dead-letter rows, newest first",
				UsageText: "queue dlq list [--queue Q] [--kind K] [--tag T] [--reason R] [--limit N] [--json]\n\nExample:\n  queue dlq list --reason max_attempts",
				Flags:     withFlags(serverFlags(), filterFlags(true), []cli.Flag{&cli.IntFlag{Name: "limit", Value: 50}, &cli.StringFlag{Name: "cursor"}, jsonFlag()}),
				Action:    dlqList,
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
				UsageText: "queue dlq replay ID [--delay D | --run-at T]\nqueue dlq replay (--queue Q | --kind K | --tag T | --reason R | --all) [--rate N] [--dry-run]\n\n" +
					"Examples:\n  queue dlq replay 42\n  queue dlq replay 42 --delay 10m\n  queue dlq replay --queue emails --rate 5",
				Flags: withFlags(serverFlags(), filterFlags(true), bulkFlags(
					&cli.StringFlag{Name: "delay", Usage: "run the new jobs after this long"},
					&cli.TimestampFlag{Name: "run-at", Layout: time.RFC3339, Usage: "run the new jobs at this time"},
					&cli.Float64Flag{Name: "rate", Usage: "bulk: spread the new jobs at this many per second"},
				)),
				Action: func(c *cli.Context) error { return dlqAction(c, app.BulkReplay) },
			},
			{
				Name:  "purge",
				Usage: "delete dead-letter rows",
				UsageText: "queue dlq purge ID\nqueue dlq purge (--queue Q | --kind K | --tag T | --reason R | --older-than D | --all) [--dry-run] [--yes]\n\n" +
					"Examples:\n  queue dlq purge 42\n  queue dlq purge --queue emails --older-than 7d",
				Flags:  withFlags(serverFlags(), filterFlags(true), bulkFlags(&cli.StringFlag{Name: "older-than", Usage: "only rows moved longer ago than this (7d, 12h)"})),
				Action: func(c *cli.Context) error { return dlqAction(c, app.BulkPurge) },
			},
			{
				Name:      "move",
				Usage:     "move queued jobs into the dead-letter queue (reason admin_move)",
				UsageText: "queue dlq move (--queue Q | --kind K | --tag T | --all) [--dry-run] [--yes]\n\nExample:\n  queue dlq move --queue broken --kind import",
				Flags:     withFlags(serverFlags(), filterFlags(false), bulkFlags()),
				Action:    func(c *cli.Context) error { return dlqAction(c, app.BulkMove) },
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
	page, err := newClient(c).ListDead(c.Context, client.DeadListOptions{Queue: c.String("queue"), Kind: c.String("kind"),
		Tag: c.String("tag"), Reason: c.String("reason"), Limit: c.Int("limit"), Cursor: c.String("cursor")})
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
	if ok, err := confirmBulk(c, cl, action, in); !ok {
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
	if v := c.String("delay"); v != "" {
		d, err := app.ParseDuration(v)
		if err != nil {
			return in, usagef("--delay: %v", err)
		}
		ad := app.Duration(d)
		in.Delay = &ad
	}
	in.RunAt = c.Timestamp("run-at")
	return in, nil
}

// dlqOne replays or purges the dead-letter row the argument names. Move
// takes queued jobs by filter only.
func dlqOne(c *cli.Context, action string, when app.ReplayInput) error {
	if action == app.BulkMove {
		return usagef("move works on filters, not ids; to move one job: `queue dlq move --queue Q --kind K`")
	}
	id, err := idArg(c, "dead-letter")
	if err != nil {
		return err
	}
	cl := newClient(c)
	if action == app.BulkReplay {
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

// bulkInput is a bulk action's filter from its flags. Without a filter or
// --all it is a usage error naming the filter flags the action takes, so a
// forgotten flag never acts on everything.
func bulkInput(c *cli.Context, action string, when app.ReplayInput) (app.BulkInput, error) {
	in := app.BulkInput{Queue: c.String("queue"), Kind: c.String("kind"), Tag: c.String("tag"), AllowAll: c.Bool("all"), DryRun: c.Bool("dry-run")}
	flags := "--queue, --kind, --tag"
	switch action {
	case app.BulkReplay:
		in.Reason = c.String("reason")
		in.Rate, in.RunAt, in.Delay = c.Float64("rate"), when.RunAt, when.Delay
		flags += ", --reason"
	case app.BulkPurge:
		in.Reason = c.String("reason")
		if v := c.String("older-than"); v != "" {
			d, err := app.ParseDuration(v)
			if err != nil {
				return in, usagef("--older-than: %v", err)
			}
			ad := app.Duration(d)
			in.OlderThan = &ad
		}
		flags += ", --reason, --older-than"
	}
	if in.Queue == "" && in.Kind == "" && in.Tag == "" && in.Reason == "" && in.OlderThan == nil && !in.AllowAll {
		return in, usagef("dlq %s needs a filter (%s) or --all to act on everything", action, flags)
	}
	return in, nil
}

// confirmBulk counts what a purge or a move would touch (a dry run) and
// asks as confirmCount does; it reports whether to go ahead. A dry run, and
// a replay (which destroys nothing), go ahead without asking.
func confirmBulk(c *cli.Context, cl *client.Client, action string, in app.BulkInput) (bool, error) {
	if in.DryRun || c.Bool("yes") || (action != app.BulkPurge && action != app.BulkMove) {
		return true, nil
	}
	dry := in
	dry.DryRun = true
	res, err := cl.Bulk(c.Context, action, dry)
	if err != nil {
		return false, remoteErr(c, err)
	}
	what := "purge " + plural(res.Count, "dead-letter row")
	none := "nothing to purge: no dead-letter row matches"
	if action == app.BulkMove {
		what = "move " + plural(res.Count, "queued job") + " to the dead-letter queue"
		none = "nothing to move: no queued job matches"
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
