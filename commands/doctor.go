package commands

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check a database: integrity, WAL, schema, job counters, stuck leases; --repair recounts the counters",
		UsageText: "queue doctor [--db PATH|postgres://...] [--repair] [--json]\n\nExamples:\n  queue doctor --db /var/lib/queue/queue.db\n" +
			"  queue doctor --db /var/lib/queue/queue.db --repair\n  queue doctor --db postgres://queue@db/queue\n\n" +
			"Works while serve runs: it only reads, but for --repair, which counts every job (about a second per\n" +
			"ten million) and rewrites the per-queue, per-status counters that differ from the rows (Stats, the\n" +
			"dashboard and a cold start read the counters). On SQLite a running serve keeps its own copy of the\n" +
			"counters: restart it after a repair. On PostgreSQL the writes of every node wait for the count.\n" +
			"Exits 1 when something needs attention.",
		Flags: []cli.Flag{dbFlag(), jsonFlag(),
			&cli.BoolFlag{Name: "repair", Usage: "rewrite the job counters that differ from a count of the rows"}},
		Action: func(c *cli.Context) error {
			db := dbOf(c)
			if db == "memory" {
				return usagef("doctor checks a SQLite file or a PostgreSQL database")
			}
			fmt.Fprintf(c.App.ErrWriter, "checking %s ...\n", redactDSN(db))
			rep, err := diagnose(c.Context, db, c.Bool("repair"))
			if err != nil {
				return err
			}
			if c.Bool("json") {
				printJSON(c.App.Writer, rep)
			} else {
				printReport(c.App.Writer, rep)
			}
			if len(rep.Problems) > 0 {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}

// diagnose opens db (read-only for a SQLite file), checks it and its
// counters, and repairs the counters if asked to.
func diagnose(ctx context.Context, db string, repair bool) (*app.Report, error) {
	if strings.Contains(db, "://") {
		s, err := openPostgres(ctx, db, app.StoreOptions{Log: newLogger(io.Discard, "", "error")})
		if err != nil {
			return nil, err
		}
		defer s.Close()
		rep, err := app.Diagnose(ctx, s, time.Now())
		if err != nil {
			return nil, err
		}
		rep.Path = redactDSN(db)
		return rep, rep.Recount(ctx, s, repair)
	}
	if _, err := os.Stat(db); err != nil {
		return nil, fmt.Errorf("%s: %w (give the database with --db)", db, err)
	}
	s, err := sqlite.Open(ctx, db, sqlite.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	rep, err := s.Doctor(ctx)
	if err != nil {
		return nil, err
	}
	return rep, rep.Recount(ctx, s, repair)
}

// printReport writes a doctor's report for a person.
func printReport(w io.Writer, r *app.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.SizeBytes > 0 || r.SchemaVersion != "" {
		fmt.Fprintf(tw, "database\t%s (%d KiB, WAL %d KiB)\n", r.Path, r.SizeBytes>>10, r.WALBytes>>10)
		fmt.Fprintf(tw, "schema\t%s\n", r.SchemaVersion)
		fmt.Fprintf(tw, "integrity\t%s\n", r.Integrity)
	} else {
		fmt.Fprintf(tw, "database\t%s\n", r.Path)
	}
	fmt.Fprintf(tw, "oldest claimable job\t%s\n", (time.Duration(r.OldestClaimable) * time.Second).String())
	fmt.Fprintf(tw, "dead-lettered\t%d in the last 24h, %d the day before\n", r.DLQLastDay, r.DLQDayBefore)
	fmt.Fprintf(tw, "stuck leases\t%d\n", r.StuckLeases)
	fmt.Fprintf(tw, "blocked workflows\t%d\n", r.BlockedWorkflows)
	switch {
	case len(r.Counts) == 0:
		fmt.Fprintf(tw, "job counters\tequal to the rows\n")
	case r.Repaired:
		fmt.Fprintf(tw, "job counters\t%d repaired\n", len(r.Counts))
	default:
		fmt.Fprintf(tw, "job counters\t%d differ from the rows\n", len(r.Counts))
	}
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tQUEUED\tSCHEDULED\tPROCESSING\tDONE\tCANCELLED\tDEAD LETTER")
	for _, q := range r.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", q.Queue, q.Queued, q.Scheduled, q.Processing, q.Done, q.Cancelled, q.DeadLetter)
	}
	tw.Flush()
	if len(r.Counts) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "QUEUE\tSTATUS\tCOUNTER\tROWS")
		for _, f := range r.Counts {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", f.Queue, f.Status, f.Counter, f.Rows)
		}
		tw.Flush()
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "no problems found")
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
}
