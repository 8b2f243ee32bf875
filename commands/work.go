package commands

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/worker"
)

func workCommand() *cli.Command {
	return &cli.Command{
		Name:  "work",
		Usage: "run a command for each job of a queue, pulling over HTTP",
		UsageText: "queue work --server URL --queue Q|--queues Q1=W1,Q2=W2|Q1,Q2 [--kind K]... [--concurrency N] [--token T] [--grace 30s] [--timeout D] [--kill-grace D] [--env KEY=VALUE]... [--pass-env NAME]... -- COMMAND ARGS...\n\n" +
			"Each job runs COMMAND (no shell: write `sh -c '...'` for one) with the payload on stdin and QUEUE_JOB_ID,\n" +
			"QUEUE_JOB_KIND, QUEUE_QUEUE, QUEUE_ATTEMPT, QUEUE_MAX_ATTEMPTS in its environment; a workflow step also gets\n" +
			"QUEUE_WORKFLOW_ID and QUEUE_STEP and, when it depends on other steps, QUEUE_PARENTS_FILE: a JSON file of their\n" +
			"states and results, {\"STEP\": {\"status\", \"job_id\", \"result\", \"error\"}, ...}, removed after the run.\n" +
			"Of this process's environment it gets only PATH, HOME, USER, LOGNAME, LANG, LC_*, TZ, TMPDIR and the --pass-env\n" +
			"names, never the token or any other QUEUE_* variable; --env sets more. Exit 0 completes the job with stdout as\n" +
			"its result (JSON if it parses); exit 65 fails it for good (dead-letter queue); any other exit, a signal or the\n" +
			"timeout fails it with a retry. SIGTERM/SIGINT: stop claiming, let running jobs finish within --grace, then stop\n" +
			"them and give their jobs back to run again elsewhere.\n\n" +
			"It registers with the server under --worker-id and heartbeats every 5s: `queue workers list` shows it, with\n" +
			"its counts; `queue workers quiet ID` makes it finish its running jobs and claim nothing more; `queue workers\n" +
			"stop ID` makes it give its running jobs back at once and exit 0.\n\n" +
			"--queues works several queues instead of --queue: with weights (critical=6,default=3,low=1) each claim\n" +
			"draws its queues in proportion, so over many claims they get work in that ratio and none starves; without\n" +
			"(critical,default) in strict order, a queue asked only when those before it have nothing. A long poll\n" +
			"wakes on any of them (POST /api/claim; see docs/flow-control.md).\n\n" +
			"Examples:\n" +
			"  queue work --queue emails -- ./send-email.sh\n" +
			"  queue work --server http://queue.internal:8080 --token $TOKEN --queue reports --kind report.build --concurrency 4 -- python3 build.py\n" +
			"  queue work --queue uploads --pass-env AWS_REGION --env BUCKET=uploads -- ./upload.sh\n" +
			"  queue work --queues critical=6,default=3,low=1 --concurrency 8 -- ./handle-job.sh\n" +
			"  queue work --queues critical,default -- ./handle-job.sh   # strict: default only when critical is empty\n" +
			"  queue work --queue etl --kind load -- sh -c 'jq -c .clean.result \"$QUEUE_PARENTS_FILE\" | ./load.sh'   # a workflow step\n" +
			"  queue work --queue default -- sh -c 'cat >/dev/null; echo \"{\\\"ok\\\":true}\"'",
		Flags: withFlags(serverFlags(), []cli.Flag{
			&cli.StringFlag{Name: "queue", Value: app.DefaultQueue, Usage: "queue to work", EnvVars: []string{"QUEUE_QUEUE"}},
			&cli.StringFlag{Name: "queues", Usage: "several queues instead of --queue: weighted (critical=6,default=3) or in strict order (critical,default)", EnvVars: []string{"QUEUE_QUEUES"}},
			&cli.StringSliceFlag{Name: "kind", Usage: "only jobs of this kind (repeatable; default: every kind)", EnvVars: []string{"QUEUE_KINDS"}},
			&cli.IntFlag{Name: "concurrency", Value: 1, Usage: "jobs run at once", EnvVars: []string{"QUEUE_CONCURRENCY"}},
			&cli.DurationFlag{Name: "grace", Value: worker.DefaultGrace, Usage: "on SIGTERM/SIGINT, how long running jobs may finish before they are stopped and given back", EnvVars: []string{"QUEUE_GRACE"}},
			&cli.DurationFlag{Name: "timeout", Usage: "stop a run after this long (default: each job's timeout)", EnvVars: []string{"QUEUE_WORK_TIMEOUT"}},
			&cli.DurationFlag{Name: "kill-grace", Value: worker.DefaultKillGrace, Usage: "time between SIGTERM and SIGKILL to a run's process group", EnvVars: []string{"QUEUE_KILL_GRACE"}},
			&cli.StringFlag{Name: "dir", Usage: "working directory of the command (default: this one)", EnvVars: []string{"QUEUE_WORK_DIR"}},
			&cli.StringSliceFlag{Name: "env", Usage: "KEY=VALUE set in the command's environment (repeatable)", EnvVars: []string{"QUEUE_WORK_ENV"}},
			&cli.StringSliceFlag{Name: "pass-env", Usage: "NAME of a variable of this environment the command gets too, e.g. AWS_REGION (repeatable; not QUEUE_*)", EnvVars: []string{"QUEUE_WORK_PASS_ENV"}},
			&cli.StringFlag{Name: "worker-id", Usage: "name of this worker in the registry (`queue workers list`) and on the jobs it holds (default: host:pid-random)", EnvVars: []string{"QUEUE_WORKER_ID"}},
			&cli.DurationFlag{Name: "poll-wait", Value: 30 * time.Second, Usage: "how long one claim waits for a job (long poll, at most 60s)", EnvVars: []string{"QUEUE_POLL_WAIT"}},
			&cli.StringFlag{Name: "log-format", Usage: "console or json (default: console on a terminal, json otherwise)", EnvVars: []string{"QUEUE_LOG_FORMAT"}},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"QUEUE_LOG_LEVEL"}},
		}),
		Action: work,
	}
}

// work runs COMMAND for each job of a queue until a signal, then lets the
// running ones finish within --grace (see workCommand).
func work(c *cli.Context) error {
	env, err := workFlags(c)
	if err != nil {
		return err
	}
	qs, err := workQueues(c)
	if err != nil {
		return err
	}
	log := newLogger(c.App.ErrWriter, c.String("log-format"), c.String("log-level")).With().Str("component", "worker").Logger()
	cl := newClient(c)
	p := workPool(c, cl, env, log)
	if qs != nil {
		p.Queue, p.Queues = "", qs
	}
	if err := reachServer(c, cl, log); err != nil {
		return err
	}
	told := make(chan struct{})
	pres, err := workPresence(c, cl, p, told, log)
	if err != nil {
		return usagef("%v", err)
	}
	defer pres.Stop()
	p.Presence = pres
	if err := p.Start(c.Context); err != nil {
		return usagef("%v", err)
	}
	select {
	case <-c.Context.Done():
		stopWork(c, p, log)
	case <-told: // `queue workers stop`: running jobs go back to the queue now
		p.Stop(0)
		log.Info().Msg("stopped by the operator; exiting")
	}
	return nil
}

// workFlags checks the flags of work and returns the --env variables.
func workFlags(c *cli.Context) (map[string]string, error) {
	argv := c.Args().Slice()
	if len(argv) == 0 || argv[0] == "" {
		return nil, usagef("give the command to run for each job after --, e.g. `queue work --queue %s -- ./handle-job.sh`", c.String("queue"))
	}
	if d := c.String("dir"); d != "" {
		if err := worker.CheckDir(d); err != nil {
			return nil, usagef("--dir: %v", err)
		}
	}
	if err := worker.CheckCommand(argv, c.String("dir")); err != nil {
		return nil, usagef("%v", err)
	}
	switch c.String("log-format") {
	case "", "console", "json":
	default:
		return nil, usagef("--log-format %q: want console or json", c.String("log-format"))
	}
	if c.Int("concurrency") < 1 || c.Int("concurrency") > app.MaxClaim {
		return nil, usagef("--concurrency %d: want 1 to %d", c.Int("concurrency"), app.MaxClaim)
	}
	for _, d := range []string{"grace", "timeout", "kill-grace", "poll-wait"} {
		if c.Duration(d) < 0 {
			return nil, usagef("--%s must not be negative", d)
		}
	}
	if c.Duration("poll-wait") > app.MaxWait {
		return nil, usagef("--poll-wait is at most %s", app.MaxWait)
	}
	env := map[string]string{}
	for _, kv := range c.StringSlice("env") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--env %q: want KEY=VALUE", kv)
		}
		env[k] = v
	}
	for _, name := range c.StringSlice("pass-env") {
		if err := worker.ValidatePassEnv(name); err != nil {
			return nil, usagef("--pass-env %v", err)
		}
	}
	return env, nil
}

// workQueues reads --queues: nil when work takes one queue (--queue).
func workQueues(c *cli.Context) (*app.QueueChoice, error) {
	if !c.IsSet("queues") {
		return nil, nil
	}
	if c.IsSet("queue") {
		return nil, usagef("--queue %q and --queues %q both name the queues to work (QUEUE_QUEUE and QUEUE_QUEUES count too): keep one; --queues takes one queue as well",
			c.String("queue"), c.String("queues"))
	}
	qs, err := app.ParseQueueChoice(c.String("queues"))
	if err != nil {
		msg := err.Error()
		var ie *app.InvalidError
		if errors.As(err, &ie) {
			msg = ie.Message
		}
		if !strings.Contains(msg, "critical") {
			msg += " (e.g. --queues critical=6,default=3, or critical,default for a strict order)"
		}
		return nil, usagef("--queues %q: %s", c.String("queues"), msg)
	}
	return qs, nil
}

// workPool is the Pool the flags of work describe, over the server cl talks to.
func workPool(c *cli.Context, cl *client.Client, env map[string]string, log zerolog.Logger) *worker.Pool {
	killGrace := c.Duration("kill-grace")
	if killGrace == 0 {
		killGrace = worker.DefaultKillGrace
	}
	return &worker.Pool{
		Backend:      cl,
		Queue:        c.String("queue"),
		Kinds:        c.StringSlice("kind"),
		Concurrency:  c.Int("concurrency"),
		Timeout:      c.Duration("timeout"),
		PollWait:     c.Duration("poll-wait"),
		WorkerID:     c.String("worker-id"),
		AbandonAfter: killGrace + 5*time.Second,
		Handler:      worker.CommandHandler(worker.CommandConfig{Command: c.Args().Slice(), Dir: c.String("dir"), Env: env, PassEnv: c.StringSlice("pass-env"), KillGrace: killGrace}),
		Log:          log,
	}
}

// reachServer asks the server whether it is ready. A refused token ends
// work (it does not fix itself); a server not reachable yet is only
// logged, since the pool retries with backoff.
func reachServer(c *cli.Context, cl *client.Client, log zerolog.Logger) error {
	err := cl.Ready(c.Context)
	if err == nil {
		return nil
	}
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusUnauthorized {
		return fmt.Errorf("%s refused the token (401): pass the right --token or set QUEUE_TOKEN", c.String("server"))
	}
	log.Warn().Err(err).Str("server", c.String("server")).
		Msg("server not reachable yet; retrying with backoff (is `queue serve` running there? set --server or QUEUE_SERVER)")
	return nil
}

// stopWork stops p after the first signal: no more claims, running jobs
// get --grace to finish; a second signal stops them at once and gives
// their jobs back.
func stopWork(c *cli.Context, p *worker.Pool, log zerolog.Logger) {
	log.Info().Dur("grace", c.Duration("grace")).Msg("signal received: no more claims; running jobs may finish (signal again to stop them now)")
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-again:
			log.Warn().Msg("second signal: stopping running jobs now and giving them back")
			p.Interrupt()
		case <-stopped:
		}
	}()
	p.Stop(c.Duration("grace"))
	close(stopped)
}

// workPresence starts the registration of work's pool p in the server's
// registry of workers: `queue workers list` shows it, and `queue workers
// quiet|stop` reach it at its next heartbeat or claim. told is closed when
// the operator says stop.
func workPresence(c *cli.Context, cl *client.Client, p *worker.Pool, told chan struct{}, log zerolog.Logger) (*worker.Presence, error) {
	qs := p.Queues
	if qs == nil {
		qs = &app.QueueChoice{Names: []string{p.Queue}}
	}
	var once sync.Once
	pres := &worker.Presence{
		Registry: cl,
		Info: app.WorkerInput{ID: p.WorkerID, Version: c.App.Version, Queues: qs, Kinds: p.Kinds,
			Concurrency: p.Concurrency, Type: app.WorkerHTTP},
		OnStop: func() { once.Do(func() { close(told) }) },
		Log:    log,
	}
	if err := pres.Start(c.Context); err != nil {
		return nil, fmt.Errorf("--worker-id: %w", err)
	}
	p.WorkerID = pres.ID()
	return pres, nil
}
