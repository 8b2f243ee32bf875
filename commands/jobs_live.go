package commands

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
)

// Finding and acting on live jobs (issue 26): the live filters of `queue
// jobs list`, and `queue jobs cancel|retry|reschedule|prioritize` on what
// a filter finds, with --dry-run and the confirmation of confirmCount.

// liveFilterFlags are the filters that look inside jobs, shared by `queue
// jobs list` and the bulk actions.
func liveFilterFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "payload", Usage: "only jobs whose payload field PATH matches VALUE: customer=42, address.city=Oslo, items.0.sku=A1 (repeat: all must hold)"},
		&cli.StringFlag{Name: "error", Usage: "only jobs with an attempt error containing this text (ASCII letters in any case)"},
		&cli.StringFlag{Name: "created-after", Usage: "only jobs created at or after this time (RFC 3339, or a duration back from now: 1h, 7d)"},
		&cli.StringFlag{Name: "created-before", Usage: "only jobs created before this time (RFC 3339 or a duration back from now)"},
		&cli.StringFlag{Name: "run-after", Usage: "only jobs whose run_at is at or after this time (RFC 3339 or a duration back from now)"},
		&cli.StringFlag{Name: "run-before", Usage: "only jobs whose run_at is before this time (RFC 3339 or a duration back from now)"},
		&cli.StringFlag{Name: "finished-after", Usage: "only jobs finished at or after this time (RFC 3339 or a duration back from now)"},
		&cli.StringFlag{Name: "finished-before", Usage: "only jobs finished before this time (RFC 3339 or a duration back from now)"},
	}
}

// jobQuery reads the live filter flags; the server checks their values.
func jobQuery(c *cli.Context) (app.JobQuery, error) {
	q := app.JobQuery{Error: c.String("error"), CreatedAfter: c.String("created-after"), CreatedBefore: c.String("created-before"),
		RunAfter: c.String("run-after"), RunBefore: c.String("run-before"), FinishedAfter: c.String("finished-after"),
		FinishedBefore: c.String("finished-before")}
	for _, kv := range c.StringSlice("payload") {
		path, value, ok := strings.Cut(kv, "=")
		path = strings.TrimPrefix(path, app.PayloadParam)
		if !ok || path == "" {
			return q, usagef("--payload takes PATH=VALUE (customer=42, address.city=Oslo), not %q", kv)
		}
		if q.Payload == nil {
			q.Payload = app.PayloadValues{}
		}
		q.Payload[path] = value
	}
	return q, nil
}

// liveCommand is `queue jobs cancel|retry|reschedule|prioritize`.
func liveCommand(action string) *cli.Command {
	flags := withFlags(serverFlags(), []cli.Flag{
		&cli.StringFlag{Name: "queue", Usage: "only this queue"},
		&cli.StringFlag{Name: "kind", Usage: "only this kind"},
		&cli.StringFlag{Name: "tag", Usage: "only jobs with this tag"},
		&cli.StringFlag{Name: "key", Usage: "only the jobs of this flow-control key"},
		&cli.StringFlag{Name: "status", Usage: "only jobs of this status (queued, scheduled, retrying, processing, done, cancelled): narrows"},
		&cli.IntFlag{Name: "workflow", Usage: "only the jobs of this workflow's released steps"},
		&cli.IntFlag{Name: "replayed-from", Usage: "only the jobs replayed from this dead-letter row"},
	}, liveFilterFlags(), bulkFlags())
	c := &cli.Command{Name: action, Flags: flags, Action: func(c *cli.Context) error { return liveAction(c, action) }}
	const filters = "(--queue Q | --kind K | --tag T | --key K | --payload PATH=VALUE | --error TEXT | --all) [--status S] [--created-after T] ... [--dry-run] [--yes]"
	switch action {
	case app.LiveCancel:
		c.Usage = "cancel a queued job, or ask a running one to stop; with filters, every job they find"
		c.UsageText = "queue jobs cancel ID\nqueue jobs cancel " + filters + "\n\n" +
			"Queued jobs are cancelled, processing ones asked to stop (their worker sees it at its next heartbeat),\n" +
			"finished ones skipped.\n\nExamples:\n  queue jobs cancel 42\n  queue jobs cancel --payload customer=42 --dry-run\n  queue jobs cancel --queue imports --error timeout --yes"
	case app.LiveRetry:
		c.Usage = "run now the queued jobs that wait for a retry or their run_at"
		c.UsageText = "queue jobs retry " + filters + " [--rate N]\n\n" +
			"Processing jobs, and queued ones already due, are skipped; --rate spreads them at N per second.\n\n" +
			"Examples:\n  queue jobs retry --queue emails --error 'connection refused'\n  queue jobs retry --kind sync --rate 10 --yes"
		c.Flags = append(c.Flags, &cli.Float64Flag{Name: "rate", Usage: "spread the jobs at this many per second"})
	case app.LiveReschedule:
		c.Usage = "give the queued jobs a filter finds a new run_at"
		c.UsageText = "queue jobs reschedule " + filters + " (--delay D | --run-at T) [--rate N]\n\n" +
			"Examples:\n  queue jobs reschedule --queue reports --delay 2h\n  queue jobs reschedule --payload tenant=acme --run-at 2026-12-01T06:00:00Z --yes"
		c.Flags = append(c.Flags,
			&cli.StringFlag{Name: "delay", Usage: "run them after this long (10m, 2h)"},
			&cli.TimestampFlag{Name: "run-at", Layout: time.RFC3339, Usage: "run them at this time"},
			&cli.Float64Flag{Name: "rate", Usage: "spread the jobs at this many per second from then"})
	case app.LivePrioritize:
		c.Usage = "give the queued jobs a filter finds a new priority (lower runs first)"
		c.UsageText = "queue jobs prioritize " + filters + " --priority N\n\n" +
			"Example:\n  queue jobs prioritize --queue emails --payload plan=enterprise --priority -10"
		c.Flags = append(c.Flags, &cli.IntFlag{Name: "priority", Usage: "the new priority, -1000 to 1000 (lower runs first)"})
	}
	return c
}

// liveAction runs a live bulk action: on the one job an argument names
// (cancel only), or on what the filter flags find, after a dry run and a
// confirmation (confirmCount's rule) unless --yes or --dry-run.
func liveAction(c *cli.Context, action string) error {
	if c.NArg() > 0 {
		if action != app.LiveCancel {
			return usagef("`queue jobs %s` takes filters, not an ID: --queue, --payload, ... (see --help)", action)
		}
		return jobsCancel(c)
	}
	q, err := jobQuery(c)
	if err != nil {
		return err
	}
	in := app.LiveBulkInput{Queue: c.String("queue"), Kind: c.String("kind"), Tag: c.String("tag"), Key: c.String("key"),
		Status: c.String("status"), Workflow: int64(c.Int("workflow")), ReplayedFrom: int64(c.Int("replayed-from")), JobQuery: q,
		AllowAll: c.Bool("all"), DryRun: c.Bool("dry-run")}
	switch action {
	case app.LiveRetry:
		in.Rate = c.Float64("rate")
	case app.LiveReschedule:
		in.Rate, in.RunAt = c.Float64("rate"), c.Timestamp("run-at")
		if in.Delay, err = durationFlag(c, "delay"); err != nil {
			return err
		}
		if in.RunAt == nil && in.Delay == nil {
			return usagef("queue jobs reschedule needs --delay or --run-at")
		}
	case app.LivePrioritize:
		if !c.IsSet("priority") {
			return usagef("queue jobs prioritize needs --priority")
		}
		p := c.Int("priority")
		in.Priority = &p
	}
	real := in.Queue != "" || in.Kind != "" || in.Tag != "" || in.Key != "" || in.Workflow != 0 || in.ReplayedFrom != 0 ||
		len(q.Payload) > 0 || q.Error != ""
	if !real && !in.AllowAll {
		return usagef("queue jobs %s needs --queue, --kind, --tag, --key, --payload or --error, or --all to act on every job (--status and the times only narrow)", action)
	}
	cl := newClient(c)
	if !in.DryRun && !c.Bool("yes") {
		dry := in
		dry.DryRun = true
		res, err := cl.BulkLive(c.Context, action, dry)
		if err != nil {
			return remoteErr(c, err)
		}
		in.Bound = res.Bound // the confirmed call acts on what was counted, not on jobs that come meanwhile
		what := map[string]string{app.LiveCancel: "cancel (or ask to stop) ", app.LiveRetry: "run now ",
			app.LiveReschedule: "reschedule ", app.LivePrioritize: "re-prioritise "}[action] + plural(res.Changed, "job")
		if ok, err := confirmCount(c, res.Changed, what, "nothing to "+action+": no job it applies to matches"); !ok {
			return err
		}
	}
	res, err := cl.BulkLive(c.Context, action, in)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, res)
	}
	verb := map[string]string{app.LiveCancel: "cancelled", app.LiveRetry: "retried", app.LiveReschedule: "rescheduled", app.LivePrioritize: "re-prioritised"}[action]
	if res.DryRun {
		fmt.Fprintf(c.App.Writer, "would have %s %d (matched %d, skipped %d)\n", verb, res.Changed, res.Matched, res.Skipped)
		for _, j := range res.Sample {
			fmt.Fprintf(c.App.Writer, "  %d %s %s %s\n", j.ID, j.Queue, j.Kind, j.Status)
		}
		return nil
	}
	fmt.Fprintf(c.App.Writer, "%s %d (matched %d, skipped %d)\n", verb, res.Changed, res.Matched, res.Skipped)
	return nil
}
