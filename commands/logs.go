package commands

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
)

// `queue jobs logs` (issue 26): the log of a job's attempt, or a live tail
// of it until the attempt ends.

func jobsLogsCommand() *cli.Command {
	return &cli.Command{
		Name:  "logs",
		Usage: "print the log of a job's attempt (time, stream, line); -f follows it until the attempt ends",
		UsageText: "queue jobs logs [-f|--follow] [--attempt N] ID\n\n" +
			"Without --attempt it prints the latest attempt that has lines (else the current one); with -f it\n" +
			"follows the running attempt (or, for a job not started yet, its first), printing lines as they\n" +
			"come, and exits when the attempt is over (Ctrl-C stops it sooner). Each attempt keeps the last\n" +
			"log_kib KiB of its queue; a log missing its first lines says so.\n\n" +
			"--json prints one JSON object a line: {\"seq\", \"at\", \"stream\", \"line\"}.\n\n" +
			"Examples:\n  queue jobs logs 42\n  queue jobs logs -f 42\n  queue jobs logs --attempt 1 42 --json",
		Flags: withFlags(serverFlags(), []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "follow the attempt until it ends"},
			&cli.IntFlag{Name: "attempt", Usage: "the attempt to print (1 is the first)"},
			jsonFlag(),
		}),
		Action: jobsLogs,
	}
}

func jobsLogs(c *cli.Context) error {
	id, err := idArg(c, "job")
	if err != nil {
		return err
	}
	attempt := c.Int("attempt")
	if attempt < 0 {
		return usagef("--attempt must be 1 or more")
	}
	cl, w := newClient(c), c.App.Writer
	o := client.LogOptions{Attempt: attempt}
	if c.Bool("follow") {
		end, err := cl.FollowLog(c.Context, id, o, func(_ int, l client.LogLine) error {
			return printLogLine(c, w, l)
		})
		if err != nil {
			if c.Context.Err() != nil {
				return nil // Ctrl-C
			}
			return remoteErr(c, err)
		}
		if !c.Bool("json") {
			fmt.Fprintf(c.App.ErrWriter, "attempt %d is over (job %s)\n", end.Attempt, end.Status)
		}
		return nil
	}
	first := true
	for {
		l, err := cl.JobLog(c.Context, id, o)
		if err != nil {
			return remoteErr(c, err)
		}
		if first && l.Truncated && !c.Bool("json") {
			fmt.Fprintf(c.App.ErrWriter, "(attempt %d: its oldest lines were dropped to keep the log's bound)\n", l.Attempt)
		}
		if first && len(l.Lines) == 0 && !c.Bool("json") {
			fmt.Fprintf(c.App.ErrWriter, "job %d has no log lines in attempt %d\n", id, l.Attempt)
		}
		first = false
		for _, line := range l.Lines {
			if err := printLogLine(c, w, line); err != nil {
				return err
			}
		}
		if l.NextAfter == 0 {
			return nil
		}
		o.Attempt, o.After = l.Attempt, l.NextAfter
	}
}

// printLogLine prints "time stream line", or with --json the line as one
// JSON object a line (JSON lines).
func printLogLine(c *cli.Context, w io.Writer, l app.LogLine) error {
	if c.Bool("json") {
		return json.NewEncoder(w).Encode(l)
	}
	_, err := fmt.Fprintf(w, "%s %s %s\n", app.FormatTime(l.At), l.Stream, l.Line)
	return err
}

// progressText is a job's progress for `queue jobs show`: "42% importing
// rows (at 2026-...)".
func progressText(j *app.Job) string {
	s := fmt.Sprintf("%d%%", *j.ProgressPercent)
	if j.ProgressMessage != "" {
		s += " " + j.ProgressMessage
	}
	if j.ProgressAt != nil {
		s += " (" + app.FormatTime(*j.ProgressAt) + ", " + age(*j.ProgressAt) + ")"
	}
	return s
}
