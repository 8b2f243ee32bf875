package commands

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
)

// Runtime settings (issue 26): `queue queues settings|set|reset` and
// `queue periodic ...`, over HTTP like the other admin commands.

// queuesSettingsCommands are the subcommands of `queue queues` that read
// and change a queue's settings at runtime.
func queuesSettingsCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:  "settings",
			Usage: "show a queue's settings in effect and where each comes from (runtime, file, file_defaults, builtin)",
			UsageText: "queue queues settings QUEUE [--json]\n\n" +
				"A setting changed at runtime (queue queues set, the API, the pages) wins over the config file, field by field;\n" +
				"a field not set at runtime comes from [queues.QUEUE], then [defaults], then the built-in default.\n\n" +
				"Examples:\n  queue queues settings emails\n  queue queues settings emails --json",
			Flags:  withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
			Action: queuesSettings,
		},
		{
			Name:  "set",
			Usage: "change a queue's settings at runtime, without a restart (key=value; key= unsets one)",
			UsageText: "queue queues set QUEUE KEY=VALUE... [--json]\n\n" +
				"KEY is a queue setting: " + strings.Join(app.SettingNames(), ", ") + ".\n" +
				"Durations as 30s, 5m, 7d; key_rate as 10/1m. An empty value (concurrency=) unsets the setting: the config\n" +
				"file's value applies again. 0 for concurrency, rate or max_queued means no limit, also over the file's.\n" +
				"The change is audited, takes effect at the next claim, and reaches every node within a second.\n\n" +
				"Examples:\n  queue queues set emails concurrency=3 rate=10 retention=48h\n  queue queues set emails concurrency=\n" +
				"  queue queues set sync key_concurrency=1 key_rate=10/1m",
			Flags:  withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
			Action: queuesSet,
		},
		{
			Name:      "reset",
			Usage:     "unset every runtime setting of a queue: the config file's apply again",
			UsageText: "queue queues reset QUEUE [--json]\n\nExample:\n  queue queues reset emails",
			Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
			Action: func(c *cli.Context) error {
				q, err := queueArg(c, "reset")
				if err != nil {
					return err
				}
				v, err := newClient(c).ResetQueueSettings(c.Context, q)
				if err != nil {
					return remoteErr(c, err)
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, v)
				}
				fmt.Fprintf(c.App.Writer, "queue %s: runtime settings reset; the config file's apply\n", q)
				return nil
			},
		},
	}
}

func queueArg(c *cli.Context, cmd string) (string, error) {
	if c.NArg() < 1 {
		return "", usagef("give a queue name, e.g. `queue queues %s default`", cmd)
	}
	return c.Args().First(), nil
}

func queuesSettings(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("give one queue name, e.g. `queue queues settings default`")
	}
	v, err := newClient(c).QueueSettings(c.Context, c.Args().First())
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, v)
	}
	return printSettings(c, v)
}

// printSettings prints each setting in effect with its source, and the
// file's value where the runtime one covers it.
func printSettings(c *cli.Context, v *app.QueueSettingsView) error {
	eff := map[string]any{}
	b, _ := json.Marshal(v.Effective)
	_ = json.Unmarshal(b, &eff)
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "SETTING\tVALUE\tSOURCE\tFILE")
	for _, name := range app.SettingNames() {
		file := "-"
		if f, ok := v.File[name]; ok {
			file = settingText(f)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, settingText(eff[name]), v.Sources[name], file)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.UpdatedAt != nil && v.UpdatedBy != nil {
		fmt.Fprintf(c.App.Writer, "\nchanged at runtime %s by %s\n", v.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z"), *v.UpdatedBy)
	}
	return nil
}

// settingText writes a setting's value as the file and `queue queues set` take it.
func settingText(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		if x == "" {
			return "-"
		}
		return x
	case float64:
		return fmt.Sprint(x)
	}
	b, _ := json.Marshal(v)
	return strings.Trim(string(b), `"`)
}

func queuesSet(c *cli.Context) error {
	if c.NArg() < 2 {
		return usagef("give a queue and settings, e.g. `queue queues set emails concurrency=3 retention=48h`")
	}
	q := c.Args().First()
	kv := map[string]string{}
	for _, a := range c.Args().Slice()[1:] {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return usagef("%q is not KEY=VALUE (KEY= unsets it); the keys are: %s", a, strings.Join(app.SettingNames(), ", "))
		}
		if _, dup := kv[k]; dup {
			return usagef("%s given twice", k)
		}
		kv[k] = v
	}
	patch, err := app.SettingsPatchFromText(kv)
	if err != nil {
		return usagef("%v", err)
	}
	v, err := newClient(c).PatchQueueSettings(c.Context, q, patch)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, v)
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(c.App.Writer, "queue %s: %s changed (in effect at the next claim, on every node within a second)\n\n", q, strings.Join(keys, ", "))
	return printSettings(c, v)
}

// periodicCommand is `queue periodic`: the periodic jobs, listed, made,
// changed, paused, resumed, run at once and deleted over the API.
func periodicCommand() *cli.Command {
	byName := func(name, usage string, fn func(c *cli.Context, cl *client.Client, name string) error) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     usage,
			UsageText: "queue periodic " + name + " NAME\n\nExample:\n  queue periodic " + name + " nightly-report",
			Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usagef("give one periodic job's name, e.g. `queue periodic %s nightly-report` (see `queue periodic list`)", name)
				}
				return fn(c, newClient(c), c.Args().First())
			},
		}
	}
	show := func(c *cli.Context, st *app.PeriodicStatus, what string) error {
		if c.Bool("json") {
			return printJSON(c.App.Writer, st)
		}
		fmt.Fprintf(c.App.Writer, "periodic %s %s\n", st.Name, what)
		return nil
	}
	pause := func(paused bool, what string) func(c *cli.Context, cl *client.Client, name string) error {
		return func(c *cli.Context, cl *client.Client, name string) error {
			st, err := cl.SetPeriodicPaused(c.Context, name, paused)
			if err != nil {
				return remoteErr(c, err)
			}
			return show(c, st, what)
		}
	}
	return &cli.Command{
		Name:  "periodic",
		Usage: "list, create, change, pause, resume, run now and delete periodic jobs",
		UsageText: "queue periodic list|create|update|delete|pause|resume|run\n\n" +
			"Jobs of the config file ([[periodic]]) can be paused, resumed and run here; those made here can also be\n" +
			"changed and deleted. Changes are audited and reach every node within a second.\n\n" +
			"Examples:\n  queue periodic list\n  queue periodic create --name cleanup --cron '@every 10m' --kind cleanup\n" +
			"  queue periodic pause cleanup\n  queue periodic run cleanup",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list the periodic jobs with their source, state, last and next fire",
				UsageText: "queue periodic list [--json]\n\nExample:\n  queue periodic list",
				Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action:    periodicList,
			},
			{
				Name:  "create",
				Usage: "make a periodic job (its fields as flags, or --file with them as JSON)",
				UsageText: "queue periodic create --name NAME --cron SPEC --kind KIND [flags] | --file entry.json\n\n" +
					"Examples:\n  queue periodic create --name cleanup --cron '@every 10m' --queue maint --kind cleanup\n" +
					"  queue periodic create --name report --cron '0 6 * * *' --timezone Europe/Paris --kind report.build --payload '{\"full\":true}'\n" +
					"  queue periodic create --file cleanup.json",
				Flags:  withFlags(serverFlags(), periodicFlags(), []cli.Flag{jsonFlag()}),
				Action: periodicCreate,
			},
			{
				Name:  "update",
				Usage: "change a periodic job made through the API (the flags given replace its fields; --file replaces it whole)",
				UsageText: "queue periodic update NAME [flags] | --file entry.json\n\n" +
					"Examples:\n  queue periodic update cleanup --cron '@every 30m'\n  queue periodic update cleanup --file cleanup.json",
				Flags:  withFlags(serverFlags(), periodicFlags(), []cli.Flag{jsonFlag()}),
				Action: periodicUpdate,
			},
			byName("delete", "delete a periodic job made through the API", func(c *cli.Context, cl *client.Client, name string) error {
				if err := cl.DeletePeriodic(c.Context, name); err != nil {
					return remoteErr(c, err)
				}
				fmt.Fprintf(c.App.Writer, "periodic %s deleted\n", name)
				return nil
			}),
			byName("pause", "stop firing a periodic job (run now still works); kept across restarts", pause(true, "paused")),
			byName("resume", "fire a paused periodic job again, from its next fire time after now", pause(false, "resumed")),
			byName("run", "enqueue one job of a periodic job now, paused or not", func(c *cli.Context, cl *client.Client, name string) error {
				job, err := cl.RunPeriodic(c.Context, name)
				if err != nil {
					return remoteErr(c, err)
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, map[string]any{"job": job})
				}
				fmt.Fprintln(c.App.Writer, job.ID)
				return nil
			}),
		},
	}
}

func periodicFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "file", Usage: "read the job's fields from this JSON file (the names of [[periodic]]), instead of the flags"},
		&cli.StringFlag{Name: "name", Usage: "the job's name (create: required)"},
		&cli.StringFlag{Name: "cron", Usage: "schedule: 5 cron fields, or @every 10m, @daily, ..."},
		&cli.StringFlag{Name: "timezone", Usage: "IANA time zone of the schedule (default UTC)"},
		&cli.StringFlag{Name: "queue", Usage: "queue of its jobs (default: default)"},
		&cli.StringFlag{Name: "kind", Usage: "kind of its jobs"},
		&cli.StringFlag{Name: "payload", Usage: "JSON payload of its jobs, @file to read a file"},
		&cli.IntFlag{Name: "priority", Usage: "-1000..1000, lower runs first"},
		&cli.IntFlag{Name: "max-attempts", Usage: "1..1000 (default: the queue's)"},
		&cli.StringFlag{Name: "timeout", Usage: "lease of one attempt (default: the queue's)"},
		&cli.StringSliceFlag{Name: "tag", Usage: "tag of its jobs (repeatable)"},
		&cli.StringFlag{Name: "key", Usage: "flow-control key of its jobs"},
		&cli.StringFlag{Name: "catch-up", Usage: "after downtime: one (fire the latest missed time once, default) or none"},
		&cli.BoolFlag{Name: "skip-if-pending", Usage: "skip a fire while an earlier one's job is queued or processing"},
	}
}

// periodicInput is in with the fields the flags set laid over it, or the
// --file's contents.
func periodicInput(c *cli.Context, in app.PeriodicInput) (app.PeriodicInput, error) {
	if f := c.String("file"); f != "" {
		for _, name := range []string{"name", "cron", "timezone", "queue", "kind", "payload", "priority", "max-attempts", "timeout", "tag", "key", "catch-up", "skip-if-pending"} {
			if c.IsSet(name) {
				return in, usagef("give the fields as flags or --file, not both (--%s)", name)
			}
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return in, fmt.Errorf("read %s: %w", f, err)
		}
		var out app.PeriodicInput
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out); err != nil {
			return in, usagef("%s: %v (give the fields of [[periodic]] as a JSON object)", f, err)
		}
		return out, nil
	}
	set := func(name string, fn func()) {
		if c.IsSet(name) {
			fn()
		}
	}
	set("name", func() { in.Name = c.String("name") })
	set("cron", func() { in.Cron = c.String("cron") })
	set("timezone", func() { in.Timezone = c.String("timezone") })
	set("queue", func() { in.Queue = c.String("queue") })
	set("kind", func() { in.Kind = c.String("kind") })
	set("priority", func() { in.Priority = c.Int("priority") })
	set("max-attempts", func() { in.MaxAttempts = c.Int("max-attempts") })
	set("tag", func() { in.Tags = c.StringSlice("tag") })
	set("key", func() { in.Key = c.String("key") })
	set("catch-up", func() { in.CatchUp = c.String("catch-up") })
	set("skip-if-pending", func() { in.SkipIfPending = c.Bool("skip-if-pending") })
	if c.IsSet("timeout") {
		d, err := app.ParseDuration(c.String("timeout"))
		if err != nil {
			return in, usagef("--timeout: %v", err)
		}
		in.Timeout = app.Duration(d)
	}
	if c.IsSet("payload") {
		p, err := readPayload(c, c.String("payload"))
		if err != nil {
			return in, err
		}
		in.Payload = p
	}
	return in, nil
}

func periodicCreate(c *cli.Context) error {
	in, err := periodicInput(c, app.PeriodicInput{})
	if err != nil {
		return err
	}
	if in.Name == "" || in.Cron == "" || in.Kind == "" {
		return usagef("give at least --name, --cron and --kind (or --file), e.g. `queue periodic create --name cleanup --cron '@every 10m' --kind cleanup`")
	}
	st, err := newClient(c).CreatePeriodic(c.Context, in)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, st)
	}
	fmt.Fprintf(c.App.Writer, "periodic %s created (%s -> %s/%s)\n", st.Name, st.Cron, st.Queue, st.Kind)
	return nil
}

func periodicUpdate(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("give one periodic job's name, e.g. `queue periodic update cleanup --cron '@every 30m'`")
	}
	name := c.Args().First()
	cl := newClient(c)
	var base app.PeriodicInput
	if c.String("file") == "" {
		cur, err := cl.GetPeriodic(c.Context, name)
		if err != nil {
			return remoteErr(c, err)
		}
		base = app.PeriodicInput{Cron: cur.Cron, Timezone: cur.Timezone, Queue: cur.Queue, Kind: cur.Kind, Priority: cur.Priority,
			MaxAttempts: cur.MaxAttempts, Timeout: cur.Timeout, Tags: cur.Tags, Key: cur.Key, CatchUp: cur.CatchUp, SkipIfPending: cur.SkipIfPending}
		if cur.Payload != nil {
			base.Payload, _ = json.Marshal(cur.Payload)
		}
	}
	in, err := periodicInput(c, base)
	if err != nil {
		return err
	}
	if in.Name != "" && in.Name != name {
		return usagef("--name %q differs from %q: a periodic job cannot be renamed (delete it and create another)", in.Name, name)
	}
	in.Name = ""
	st, err := cl.UpdatePeriodic(c.Context, name, in)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, st)
	}
	fmt.Fprintf(c.App.Writer, "periodic %s updated (%s -> %s/%s)\n", st.Name, st.Cron, st.Queue, st.Kind)
	return nil
}

func periodicList(c *cli.Context) error {
	list, err := newClient(c).Periodic(c.Context)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"periodic": list})
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSCHEDULE\tQUEUE\tKIND\tSTATE\tLAST FIRE\tNEXT FIRE")
	for _, p := range list {
		state, last, next := "active", "-", "-"
		if p.Paused {
			state = "paused"
		}
		if p.LastFire != nil {
			last = age(*p.LastFire)
		}
		if p.NextFire != nil {
			next = age(*p.NextFire)
		}
		sched := p.Cron
		if p.Timezone != "" {
			sched += " (" + p.Timezone + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Source, sched, p.Queue, p.Kind, state, last, next)
	}
	return tw.Flush()
}
