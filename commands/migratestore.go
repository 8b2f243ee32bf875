package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/postgres"
	"github.com/queuehq/queue/sqlite"
)

func migrateStoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate-store",
		Usage: "copy every job, dead-letter row and queue state from a SQLite database into an empty PostgreSQL one",
		UsageText: "queue migrate-store --from queue.db --to postgres://...\n\n" +
			"Example:\n  systemctl stop queue\n  queue migrate-store --from /var/lib/queue/queue.db --to 'postgres://queue:secret@db.internal:5432/queue'\n\n" +
			"Stop the server on the SQLite file first (migrate-store refuses while it runs). It copies jobs (same ids,\n" +
			"every field: status, attempts, lease, errors, ...), dead-letter rows, workflows (with their steps and\n" +
			"dependencies), queue state (paused), periodic fire records, once records, audit entries and lifecycle\n" +
			"events, and runtime settings (queue settings and periodic jobs set through the API) in one transaction: if it fails, the target\n" +
			"stays empty and you can run it again. The target must hold no jobs; its schema is created as `serve` would.\n" +
			"See docs/scaling.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "the SQLite database to copy from (opened read-only)", EnvVars: []string{"QUEUE_MIGRATE_FROM"}},
			&cli.StringFlag{Name: "to", Usage: "the PostgreSQL database to copy into (postgres://...)", EnvVars: []string{"QUEUE_MIGRATE_TO"}},
			&cli.IntFlag{Name: "batch", Value: 1000, Usage: "rows per batch", EnvVars: []string{"QUEUE_MIGRATE_BATCH"}},
		},
		Action: func(c *cli.Context) error {
			from, to := c.String("from"), c.String("to")
			switch {
			case c.NArg() > 0:
				return usagef("migrate-store takes no arguments (got %q); give --from and --to", c.Args().First())
			case from == "" || to == "":
				return usagef("give both --from (a SQLite file) and --to (postgres://...), e.g. `queue migrate-store --from queue.db --to postgres://localhost/queue`")
			case from == "memory" || strings.Contains(from, "://"):
				return usagef("--from %q: migrate-store copies from a SQLite file", redactDSN(from))
			case !strings.HasPrefix(to, "postgres://") && !strings.HasPrefix(to, "postgresql://"):
				return usagef("--to %q: migrate-store copies into PostgreSQL (postgres://...)", redactDSN(to))
			case c.Int("batch") < 1 || c.Int("batch") > 100000:
				return usagef("--batch %d: want 1 to 100000 rows", c.Int("batch"))
			}
			return migrateStore(c, from, to, c.Int("batch"))
		},
	}
}

func migrateStore(c *cli.Context, from, to string, batch int) error {
	ctx := c.Context
	out, errw := c.App.Writer, c.App.ErrWriter
	if _, err := os.Stat(from); err != nil {
		return fmt.Errorf("%s: %w (give the SQLite database with --from)", from, err)
	}
	start := time.Now()
	src, err := sqlite.Open(ctx, from, sqlite.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer src.Close()
	log := newLogger(errw, "", "warn")
	dst, err := postgres.Open(ctx, to, postgres.Options{StoreOptions: app.StoreOptions{Log: log}})
	if err != nil {
		return err
	}
	defer dst.Close()
	fmt.Fprintf(errw, "copying %s into %s (schema %s) ...\n", from, redactDSN(to), dst.Schema())
	im, err := dst.BeginImport(ctx)
	if err != nil {
		return err
	}
	defer im.Rollback(context.WithoutCancel(ctx))
	var last time.Time
	sum, err := src.Export(ctx, batch, func(b app.Rows) error {
		if err := im.Add(ctx, b); err != nil {
			return err
		}
		if b.Done == b.Total || time.Since(last) > time.Second {
			fmt.Fprintf(errw, "  %-16s %d/%d\n", b.Table, b.Done, b.Total)
			last = time.Now()
		}
		return nil
	})
	if err != nil {
		var le *sqlite.LockedError
		if errors.As(err, &le) { // its own text suggests another --db, a flag migrate-store does not have
			owner := le.Owner
			if owner == "" {
				owner = "another process"
			}
			return fmt.Errorf("%s is in use by %s (lock file %s.lock): stop that server first (e.g. `systemctl stop queue`), then run migrate-store again; nothing was copied",
				le.Path, owner, le.Path)
		}
		return fmt.Errorf("copy: %w; nothing was copied, the target is unchanged", err)
	}
	copied := im.Rows()
	for _, t := range sqlite.ExportTables {
		if copied[t] != sum.Rows[t] {
			return fmt.Errorf("copy: %s: read %d rows, wrote %d; nothing was copied, the target is unchanged", t, sum.Rows[t], copied[t])
		}
	}
	im.Reserve("workflows", sum.MaxWorkflowID)
	if err := im.Commit(ctx, sum.MaxJobID); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	// Check the result the way a server will read it.
	jobs, err := dst.CountJobs(ctx, app.JobFilter{})
	if err != nil {
		return err
	}
	dead, err := dst.CountDead(ctx, app.DeadFilter{})
	if err != nil {
		return err
	}
	if int64(jobs) != sum.Rows["jobs"] || int64(dead) != sum.Rows["dead_letter_jobs"] {
		return fmt.Errorf("after the copy PostgreSQL holds %d jobs and %d dead-letter rows, the source %d and %d",
			jobs, dead, sum.Rows["jobs"], sum.Rows["dead_letter_jobs"])
	}
	fmt.Fprintf(out, "copied %d jobs, %d dead-letter rows, %d workflows (%d steps), %d queues, %d periodic fires, %d once records, %d audit entries, %d events, %d runtime settings in %s\n",
		jobs, dead, sum.Rows["workflows"], sum.Rows["workflow_steps"], sum.Rows["queues"], sum.Rows["periodic_fires"], sum.Rows["once_records"], sum.Rows["audit"], sum.Rows["events"],
		sum.Rows["runtime_settings"], time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(out, "next job id > %d. Start the servers with --db %s (keep %s as a backup; do not serve it again)\n",
		sum.MaxJobID, redactDSN(to), from)
	return nil
}
