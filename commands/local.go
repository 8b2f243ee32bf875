package commands

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/sqlite"
)

func dbFlag() cli.Flag {
	return &cli.StringFlag{Name: "db", Usage: "database (SQLite file or postgres://...; default: queue.db)", EnvVars: []string{"QUEUE_DB"}}
}

// sqliteDBFlag is --db of the commands that work on a SQLite file only
// (backup, doctor).
func sqliteDBFlag() cli.Flag {
	return &cli.StringFlag{Name: "db", Usage: "the SQLite database file (default: queue.db); not PostgreSQL", EnvVars: []string{"QUEUE_DB"}}
}

func dbOf(c *cli.Context) string {
	if d := c.String("db"); d != "" {
		return d
	}
	return stateDB()
}

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate",
		Usage:     "apply schema migrations and print the schema version",
		UsageText: "queue migrate --db PATH\n\nExample:\n  queue migrate --db /var/lib/queue/queue.db\n\n(serve also applies them at start; run this before an upgrade to check.)",
		Flags:     []cli.Flag{dbFlag()},
		Action: func(c *cli.Context) error {
			s, err := OpenStore(c.Context, dbOf(c), "full", app.StoreOptions{Log: newLogger(c.App.ErrWriter, "", "info")})
			if err != nil {
				return err
			}
			defer s.Close()
			v := "unknown"
			if sv, ok := s.(schemaVersioner); ok {
				if v, err = sv.SchemaVersion(c.Context); err != nil {
					return err
				}
			}
			fmt.Fprintf(c.App.Writer, "%s: schema at %s\n", redactDSN(dbOf(c)), v)
			return nil
		},
	}
}

func backupCommand() *cli.Command {
	return &cli.Command{
		Name:  "backup",
		Usage: "write a consistent copy of a SQLite database, even while serve runs",
		UsageText: "queue backup [--db PATH] OUT\n\nExample:\n  queue backup --db /var/lib/queue/queue.db /var/backups/queue-$(date +%F).db\n\n" +
			"The copy is checked by opening it. SQLite only: for PostgreSQL use pg_dump.",
		Flags: []cli.Flag{sqliteDBFlag(), &cli.BoolFlag{Name: "force", Usage: "overwrite OUT if it exists"}},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("give the output file: `queue backup --db queue.db backup.db`")
			}
			out := c.Args().First()
			db := dbOf(c)
			if strings.Contains(db, "://") || db == "memory" {
				return usagef("backup copies SQLite files; for PostgreSQL use pg_dump")
			}
			if _, err := os.Stat(out); err == nil {
				if !c.Bool("force") {
					return usagef("%s exists; pass --force to overwrite it", out)
				}
				if err := os.Remove(out); err != nil {
					return err
				}
			}
			s, err := sqlite.Open(c.Context, db, sqlite.Options{ReadOnly: true})
			if err != nil {
				return err
			}
			defer s.Close()
			start := time.Now()
			fmt.Fprintf(c.App.ErrWriter, "backing up %s to %s ...\n", db, out)
			n, err := s.Backup(c.Context, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "%s: %d jobs, %d dead-letter rows, checked, in %s\n", out, n.Jobs, n.Dead, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
}

func configCommand() *cli.Command {
	return &cli.Command{
		Name:      "config",
		Usage:     "work with the config file",
		UsageText: "queue config check FILE\n\nExample:\n  queue config check /etc/queue/queue.toml",
		Subcommands: []*cli.Command{{
			Name:  "check",
			Usage: "check a config file as serve would, and print the next fire times of its periodic jobs",
			UsageText: "queue config check FILE\n\n" +
				"Runs every check serve runs before it starts (keys and values, token files, the commands and dirs of\n" +
				"[[workers]], the address and database, a token beyond localhost), reading serve's flags and QUEUE_*\n" +
				"variables as serve does. Exit 0: serve would start with it; exit 2: the message names the problem.\n\n" +
				"Examples:\n  queue config check queue.toml\n  queue config check --config /etc/queue/queue.toml",
			Flags:  configCheckFlags(),
			Action: configCheck,
		}},
	}
}

// configCheckFlags are serve's flags, hidden but for --config, so that
// config check reads the flags and environment as serve does.
func configCheckFlags() []cli.Flag {
	fl := serveFlags()
	for _, f := range fl {
		switch f := f.(type) {
		case *cli.StringFlag:
			f.Hidden = f.Name != "config"
			if f.Name == "config" {
				f.Usage = "the config file, as serve --config takes it (instead of FILE)"
			}
		case *cli.StringSliceFlag:
			f.Hidden = true
		case *cli.BoolFlag:
			f.Hidden = true
		case *cli.DurationFlag:
			f.Hidden = true
		}
	}
	return fl
}

// configCheck loads the config as serve does (serveConfig), runs serve's
// checks on it (checkServe) and prints what it holds.
func configCheck(c *cli.Context) error {
	path := c.Args().First()
	if flag := c.String("config"); flag != "" {
		if path != "" && path != flag {
			return usagef("give the config file once: FILE or --config, not both")
		}
		path = flag
	}
	if path == "" || c.NArg() > 1 {
		return usagef("give one config file: `queue config check queue.toml`")
	}
	if err := c.Set("config", path); err != nil {
		return err
	}
	cfg, err := serveConfig(c)
	if err != nil {
		return err
	}
	if err := checkServe(cfg); err != nil {
		return err
	}
	w := c.App.Writer
	fmt.Fprintf(w, "%s: ok (%d queues, %d tokens, %d periodic jobs, %d workers)\n", path, len(cfg.Queues), len(cfg.Tokens), len(cfg.Periodic), len(cfg.Workers))
	now := time.Now()
	for _, p := range cfg.Periodic {
		fmt.Fprintf(w, "periodic %q (%s -> %s/%s, catch_up %s):\n", p.Name, p.Cron, p.Queue, p.Kind, p.CatchUp)
		loc := time.UTC
		if p.Timezone != "" {
			loc, _ = time.LoadLocation(p.Timezone) // validated by loadConfig
		}
		t := now
		for i := 0; i < 5; i++ {
			t = p.Schedule.Next(t)
			fmt.Fprintf(w, "  %s (%s UTC)\n", t.In(loc).Format(time.RFC3339), t.UTC().Format("2006-01-02 15:04"))
		}
	}
	for _, wk := range cfg.Workers {
		kinds := "all kinds"
		if len(wk.Kinds) > 0 {
			kinds = strings.Join(wk.Kinds, ", ")
		}
		fmt.Fprintf(w, "worker %s (%s) x%d: %s\n", wk.Queue, kinds, wk.Concurrency, strings.Join(wk.Command, " "))
	}
	return nil
}

// schemaVersioner is a store that can tell its schema version.
type schemaVersioner interface {
	SchemaVersion(ctx context.Context) (string, error)
}
