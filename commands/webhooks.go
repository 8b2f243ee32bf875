package commands

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/sqlite"
)

// webhooksCommand is `queue webhooks`: the webhook subscriptions, listed,
// made, changed, deleted and tested over the API (admin), their
// deliveries, and the callback secret (read from the database itself: no
// answer of the API carries it).
func webhooksCommand() *cli.Command {
	byName := func(name, usage, example string, fn func(c *cli.Context, cl *client.Client, name string) error, flags ...cli.Flag) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     usage,
			UsageText: "queue webhooks " + name + " NAME\n\nExample:\n  " + example,
			Flags:     withFlags(serverFlags(), flags, []cli.Flag{jsonFlag()}),
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usagef("give one subscription's name, e.g. `%s` (see `queue webhooks list`)", example)
				}
				return fn(c, newClient(c), c.Args().First())
			},
		}
	}
	return &cli.Command{
		Name:  "webhooks",
		Usage: "list, add, change, remove and test webhook subscriptions; see their deliveries; print the callback secret",
		UsageText: "queue webhooks list|show|add|update|remove|deliveries|test|callback-secret\n\n" +
			"A subscription delivers events (job.dead_lettered, job.succeeded, ...) of some or every queue to a URL, each\n" +
			"request signed with its secret; deliveries are jobs of the queue _webhooks, retried with backoff.\n" +
			"Subscriptions of the config file ([[webhooks.subscriptions]]) are read-only here.\n\n" +
			"Examples:\n  queue webhooks add --name ops --url https://hooks.example.com/queue --secret-file ops.secret --event job.dead_lettered\n" +
			"  queue webhooks list\n  queue webhooks deliveries ops\n  queue webhooks test ops",
		Subcommands: []*cli.Command{
			{
				Name:      "list",
				Usage:     "list the subscriptions with their source, events and queues",
				UsageText: "queue webhooks list [--json]\n\nExample:\n  queue webhooks list",
				Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action:    webhooksList,
			},
			byName("show", "show one subscription (never its secret)", "queue webhooks show ops", func(c *cli.Context, cl *client.Client, name string) error {
				w, err := cl.GetWebhook(c.Context, name)
				if err != nil {
					return remoteErr(c, err)
				}
				return printWebhook(c, w)
			}),
			{
				Name:  "add",
				Usage: "make a subscription: a name, a URL, a secret and the events it delivers",
				UsageText: "queue webhooks add --name NAME --url URL (--secret SECRET | --secret-file FILE) --event TYPE... [--queue QUEUE...] [--disabled]\n\n" +
					"TYPE is one of " + strings.Join(app.WebhookEvents, ", ") + ", or * for all of them.\n" +
					"Without --queue it delivers the events of every queue. The secret (16 characters or more) signs each request;\n" +
					"prefer --secret-file or QUEUE_WEBHOOK_SECRET to a secret on the command line.\n\n" +
					"Examples:\n  queue webhooks add --name ops --url https://hooks.example.com/queue --secret-file ops.secret --event job.dead_lettered\n" +
					"  queue webhooks add --name done --url https://api.example.com/done --secret-file s --event job.succeeded --queue emails",
				Flags:  withFlags(serverFlags(), webhookFlags(true), []cli.Flag{jsonFlag()}),
				Action: webhooksAdd,
			},
			{
				Name:  "update",
				Usage: "change a subscription made through the API (the flags given replace its fields; the secret stays unless given)",
				UsageText: "queue webhooks update NAME [--url URL] [--secret SECRET | --secret-file FILE] [--event TYPE...] [--queue QUEUE... | --all-queues] [--disabled | --enabled]\n\n" +
					"Examples:\n  queue webhooks update ops --event job.dead_lettered --event job.expired\n  queue webhooks update ops --disabled\n" +
					"  queue webhooks update ops --secret-file new.secret",
				Flags:  withFlags(serverFlags(), webhookFlags(false), []cli.Flag{jsonFlag()}),
				Action: webhooksUpdate,
			},
			byName("remove", "delete a subscription made through the API (its deliveries not yet sent fail)", "queue webhooks remove ops",
				func(c *cli.Context, cl *client.Client, name string) error {
					if err := cl.DeleteWebhook(c.Context, name); err != nil {
						return remoteErr(c, err)
					}
					fmt.Fprintf(c.App.Writer, "webhook %s removed\n", name)
					return nil
				}),
			byName("deliveries", "list a subscription's deliveries, newest first, with their status", "queue webhooks deliveries ops --limit 20",
				webhooksDeliveries,
				&cli.IntFlag{Name: "limit", Usage: "deliveries per page, 1..1000 (default 50)"},
				&cli.StringFlag{Name: "cursor", Usage: "the next_cursor of an earlier page"}),
			byName("test", "send a webhook.test event to a subscription (a delivery job like any other)", "queue webhooks test ops",
				func(c *cli.Context, cl *client.Client, name string) error {
					id, err := cl.TestWebhook(c.Context, name)
					if err != nil {
						return remoteErr(c, err)
					}
					if c.Bool("json") {
						return printJSON(c.App.Writer, map[string]int64{"job_id": id})
					}
					fmt.Fprintln(c.App.Writer, id)
					return nil
				}),
			{
				Name:  "callback-secret",
				Usage: "print the secret that signs callbacks (callback_url), from the config file or the database",
				UsageText: "queue webhooks callback-secret [--db PATH] [--config FILE]\n\n" +
					"The config file's [webhooks] callback_secret if it sets one; else the secret the server generated and keeps in\n" +
					"the database (made here if there is none yet and the database is free). It reads the database itself: no API\n" +
					"answer carries it.\n\n" +
					"Examples:\n  queue webhooks callback-secret --db /var/lib/queue/queue.db\n  queue webhooks callback-secret --config /etc/queue/queue.toml",
				Flags:  []cli.Flag{dbFlag(), &cli.StringFlag{Name: "config", Usage: "the config file (its [webhooks] callback_secret and [server] db)", EnvVars: []string{"QUEUE_CONFIG"}}},
				Action: webhooksCallbackSecret,
			},
		},
	}
}

func webhookFlags(add bool) []cli.Flag {
	fl := []cli.Flag{
		&cli.StringFlag{Name: "url", Usage: "where to POST the events (http or https)"},
		&cli.StringFlag{Name: "secret", Usage: "the signing secret, 16 characters or more", EnvVars: []string{"QUEUE_WEBHOOK_SECRET"}},
		&cli.StringFlag{Name: "secret-file", Usage: "read the signing secret from this file (trailing newline dropped)"},
		&cli.StringSliceFlag{Name: "event", Usage: "an event type to deliver, or * (repeatable)"},
		&cli.StringSliceFlag{Name: "queue", Usage: "deliver only this queue's events (repeatable; none: every queue)"},
		&cli.BoolFlag{Name: "disabled", Usage: "keep the subscription but deliver nothing"},
	}
	if add {
		return append([]cli.Flag{&cli.StringFlag{Name: "name", Usage: "the subscription's name: 1-64 of A-Z a-z 0-9 _ . -, the first a letter or a digit"}}, fl...)
	}
	return append(fl,
		&cli.BoolFlag{Name: "enabled", Usage: "deliver again (undo --disabled)"},
		&cli.BoolFlag{Name: "all-queues", Usage: "deliver the events of every queue (drop the --queue list)"})
}

// webhookSecret is the secret the flags give ("" if none).
func webhookSecret(c *cli.Context) (string, error) {
	f := c.String("secret-file")
	if f == "" {
		return c.String("secret"), nil
	}
	if c.IsSet("secret") {
		return "", usagef("give --secret or --secret-file, not both")
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return "", fmt.Errorf("read the secret: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func webhooksAdd(c *cli.Context) error {
	secret, err := webhookSecret(c)
	if err != nil {
		return err
	}
	in := app.WebhookInput{Name: c.String("name"), URL: c.String("url"), Secret: secret, Events: c.StringSlice("event"),
		Queues: c.StringSlice("queue"), Disabled: c.Bool("disabled")}
	if in.Name == "" || in.URL == "" || in.Secret == "" || len(in.Events) == 0 {
		return usagef("give --name, --url, --secret (or --secret-file) and at least one --event, e.g. " +
			"`queue webhooks add --name ops --url https://hooks.example.com/queue --secret-file ops.secret --event job.dead_lettered`")
	}
	w, err := newClient(c).CreateWebhook(c.Context, in)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, w)
	}
	fmt.Fprintf(c.App.Writer, "webhook %s added (%s -> %s)\n", w.Name, strings.Join(w.Events, ","), w.URL)
	return nil
}

func webhooksUpdate(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("give one subscription's name, e.g. `queue webhooks update ops --disabled`")
	}
	switch {
	case c.Bool("disabled") && c.Bool("enabled"):
		return usagef("give --disabled or --enabled, not both")
	case c.Bool("all-queues") && c.IsSet("queue"):
		return usagef("give --queue or --all-queues, not both")
	}
	name := c.Args().First()
	secret, err := webhookSecret(c)
	if err != nil {
		return err
	}
	cl := newClient(c)
	cur, err := cl.GetWebhook(c.Context, name)
	if err != nil {
		return remoteErr(c, err)
	}
	in := app.WebhookInput{URL: cur.URL, Secret: secret, Events: cur.Events, Queues: cur.Queues, Disabled: cur.Disabled}
	if c.IsSet("url") {
		in.URL = c.String("url")
	}
	if c.IsSet("event") {
		in.Events = c.StringSlice("event")
	}
	if c.IsSet("queue") {
		in.Queues = c.StringSlice("queue")
	}
	if c.Bool("all-queues") {
		in.Queues = nil
	}
	if c.Bool("disabled") {
		in.Disabled = true
	}
	if c.Bool("enabled") {
		in.Disabled = false
	}
	w, err := cl.PutWebhook(c.Context, name, in)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, w)
	}
	fmt.Fprintf(c.App.Writer, "webhook %s updated\n", w.Name)
	return nil
}

func webhooksList(c *cli.Context) error {
	list, err := newClient(c).Webhooks(c.Context)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, map[string]any{"webhooks": list})
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSTATE\tEVENTS\tQUEUES\tURL")
	for _, w := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", w.Name, w.Source, webhookState(w), strings.Join(w.Events, ","), webhookQueues(w), w.URL)
	}
	return tw.Flush()
}

func webhookState(w app.WebhookSubscription) string {
	if w.Disabled {
		return "disabled"
	}
	return "enabled"
}

func webhookQueues(w app.WebhookSubscription) string {
	if len(w.Queues) == 0 {
		return "(all)"
	}
	return strings.Join(w.Queues, ",")
}

func printWebhook(c *cli.Context, w *app.WebhookSubscription) error {
	if c.Bool("json") {
		return printJSON(c.App.Writer, w)
	}
	tw := table(c.App.Writer)
	fmt.Fprintf(tw, "name\t%s\nsource\t%s\nstate\t%s\nurl\t%s\nevents\t%s\nqueues\t%s\nsecret\t(set; never shown)\n",
		w.Name, w.Source, webhookState(*w), w.URL, strings.Join(w.Events, ","), webhookQueues(*w))
	if !w.UpdatedAt.IsZero() {
		fmt.Fprintf(tw, "updated\t%s\n", w.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	return tw.Flush()
}

func webhooksDeliveries(c *cli.Context, cl *client.Client, name string) error {
	page, err := cl.WebhookDeliveries(c.Context, name, c.Int("limit"), c.String("cursor"))
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, page)
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "JOB\tSTATUS\tEVENT\tOF JOB\tATTEMPTS\tHTTP\tCREATED\tLAST ERROR")
	for _, d := range page.Deliveries {
		of, status := "-", "-"
		if d.EventJobID != nil {
			of = fmt.Sprint(*d.EventJobID)
		}
		if d.ResponseStatus != nil {
			status = fmt.Sprint(*d.ResponseStatus)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", d.JobID, d.Status, d.Event, of, d.Attempts, d.MaxAttempts, status,
			age(d.CreatedAt), app.TruncateString(d.LastError, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(c.App.ErrWriter, "more: queue webhooks deliveries %s --cursor %s\n", name, page.NextCursor)
	}
	return nil
}

// webhooksCallbackSecret prints the callback secret: the config file's, or
// the database's (made now if there is none and the database is free; a
// SQLite file a server holds is read as it is).
func webhooksCallbackSecret(c *cli.Context) error {
	db := c.String("db")
	if path := c.String("config"); path != "" {
		cfg, err := loadConfig(path)
		if err != nil {
			return err
		}
		if cfg.Webhooks.CallbackSecret != "" {
			fmt.Fprintln(c.App.Writer, cfg.Webhooks.CallbackSecret)
			return nil
		}
		if db == "" {
			db = cfg.Server.DB
		}
	}
	if db == "" {
		db = stateDB()
	}
	if db == "memory" {
		return usagef("--db memory keeps nothing: give the server's database")
	}
	log := newLogger(c.App.ErrWriter, "", "warn")
	s, err := OpenStore(c.Context, db, "full", app.StoreOptions{Log: log})
	var le *sqlite.LockedError
	if errors.As(err, &le) { // a server holds it: read what it stored
		ro, err := sqlite.Open(c.Context, db, sqlite.Options{StoreOptions: app.StoreOptions{Log: log}, ReadOnly: true})
		if err != nil {
			return err
		}
		defer ro.Close()
		recs, err := ro.Settings(c.Context)
		if err != nil {
			return err
		}
		sec, ok := app.StoredCallbackSecret(recs)
		if !ok {
			return fmt.Errorf("%s holds no callback secret yet (the server makes one for the first callback it sends); run this again then, or set [webhooks] callback_secret", db)
		}
		fmt.Fprintln(c.App.Writer, sec)
		return nil
	}
	if err != nil {
		return err
	}
	defer s.Close()
	svc := app.NewService(s, app.DefaultConfig(), app.SystemClock{}, nil, log)
	sec, err := svc.CallbackSecret(c.Context)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, sec)
	return nil
}
