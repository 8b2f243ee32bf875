package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/ui"
)

func serveCommand(b Build) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the server: HTTP API, web UI, workers, maintenance",
		UsageText: "queue serve [--db PATH|postgres://...|memory] [--addr 127.0.0.1:8080] [--config queue.toml]\n\n" +
			"Examples:\n  queue serve\n  queue serve --db /var/lib/queue/queue.db --config /etc/queue/queue.toml\n" +
			"  QUEUE_TOKEN=$(openssl rand -hex 24) queue serve --addr 0.0.0.0:8080",
		Flags: serveFlags(),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("serve takes no arguments (got %q); flags go before nothing else", c.Args().First())
			}
			tuneGC()
			return serve(c, b)
		},
	}
}

// serveFlags are the flags of serve. config check takes them too (hidden),
// so that it reads the flags and QUEUE_* variables as serve does.
func serveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "db", Usage: "database: a SQLite file, postgres://..., or memory (default: queue.db, or $STATE_DIRECTORY/queue.db under systemd)", EnvVars: []string{"QUEUE_DB"}},
		&cli.StringFlag{Name: "addr", Value: "127.0.0.1:8080", Usage: "listen address", EnvVars: []string{"QUEUE_ADDR"}},
		&cli.StringFlag{Name: "config", Usage: "config file (TOML)", EnvVars: []string{"QUEUE_CONFIG"}},
		&cli.StringFlag{Name: "sync", Value: "full", Usage: "SQLite durability: full (survives power loss) or normal (faster; the last commits may be lost on power loss)", EnvVars: []string{"QUEUE_SYNC"}},
		&cli.StringFlag{Name: "token", Usage: "API token required on every request (named \"default\" in the audit trail)", EnvVars: []string{"QUEUE_TOKEN"}},
		&cli.StringFlag{Name: "token-file", Usage: "file holding the \"default\" token instead of --token, e.g. a systemd credential: ${CREDENTIALS_DIRECTORY}/NAME", EnvVars: []string{"QUEUE_TOKEN_FILE"}},
		&cli.StringSliceFlag{Name: "allowed-hosts", Usage: "Host names requests may carry besides this machine's, comma-separated, added to allowed_hosts of the config (*.example.com: any subdomain)", EnvVars: []string{"QUEUE_ALLOWED_HOSTS"}},
		&cli.BoolFlag{Name: "insecure", Usage: "allow a non-loopback address without a token", EnvVars: []string{"QUEUE_INSECURE"}},
		&cli.StringFlag{Name: "log-format", Usage: "console or json (default: console on a terminal, json otherwise)", EnvVars: []string{"QUEUE_LOG_FORMAT"}},
		&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"QUEUE_LOG_LEVEL"}},
		&cli.DurationFlag{Name: "grace", Value: 30 * time.Second, Usage: "how long running jobs of built-in workers may finish on shutdown", EnvVars: []string{"QUEUE_GRACE"}},
	}
}

// serveGCPercent is the server's GOGC unless the environment sets one. The
// server's live heap is small (a few MB) and every request allocates, so the
// default 100 spends a tenth of the CPU of a busy server collecting; 300
// trades a few MB of resident memory for that CPU.
const serveGCPercent = 300

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
}

// serveConfig is the config file with the flags laid over it: a flag set on
// the command line or in the environment wins, then the file, then defaults.
func serveConfig(c *cli.Context) (*config, error) {
	cfg := defaultConfig()
	if path := c.String("config"); path != "" {
		var err error
		if cfg, err = loadConfig(path); err != nil {
			return nil, err
		}
	}
	pick := func(flag string, file *string) {
		if c.IsSet(flag) || *file == "" {
			*file = c.String(flag)
		}
	}
	pick("db", &cfg.Server.DB)
	pick("addr", &cfg.Server.Addr)
	pick("sync", &cfg.Server.Sync)
	pick("log-format", &cfg.Server.LogFormat)
	pick("log-level", &cfg.Server.LogLevel)
	if c.IsSet("insecure") {
		cfg.Server.Insecure = c.Bool("insecure")
	}
	if c.IsSet("grace") || cfg.Server.Grace == 0 {
		cfg.Server.Grace = app.Duration(c.Duration("grace"))
	}
	if cfg.Server.DB == "" {
		cfg.Server.DB = stateDB()
	}
	if c.String("token") != "" && c.String("token-file") != "" {
		return nil, usagef("--token and --token-file (or QUEUE_TOKEN and QUEUE_TOKEN_FILE) both give the default token: keep one, --token-file keeps the secret out of the environment")
	}
	if t := c.String("token"); t != "" {
		if len(t) < minTokenLength {
			return nil, usagef("--token is too short (at least 16 characters; try `openssl rand -hex 24`)")
		}
		cfg.Tokens = append(cfg.Tokens, tokenConfig{Name: "default", Token: t})
	}
	if f := c.String("token-file"); f != "" {
		path := os.ExpandEnv(f) // ${CREDENTIALS_DIRECTORY}/NAME, as token_file in the config
		t, err := readTokenFile(path)
		if err != nil {
			return nil, usagef("--token-file: %v", err)
		}
		cfg.Tokens = append(cfg.Tokens, tokenConfig{Name: "default", Token: t, TokenFile: path})
	}
	for _, h := range c.StringSlice("allowed-hosts") { // split at commas and trimmed by cli
		if err := ui.ValidateAllowedHost(h); err != nil {
			return nil, usagef("--allowed-hosts: %v", err)
		}
		cfg.Server.AllowedHosts = append(cfg.Server.AllowedHosts, h)
	}
	switch strings.ToLower(cfg.Server.Sync) {
	case "full", "normal":
	default:
		return nil, usagef("--sync %q: want full or normal", cfg.Server.Sync)
	}
	switch cfg.Server.LogFormat {
	case "", "console", "json":
	default:
		return nil, usagef("--log-format %q: want console or json", cfg.Server.LogFormat)
	}
	if _, err := zerolog.ParseLevel(cfg.Server.LogLevel); err != nil || cfg.Server.LogLevel == "" {
		return nil, usagef("--log-level %q: want debug, info, warn or error", cfg.Server.LogLevel)
	}
	return cfg, nil
}

// Logs write durations as strings ("492ms", "1m30s"), never as a bare
// number whose unit a reader has to guess. It is zerolog's global, so it
// holds for every component's logger in this process.
func init() { zerolog.DurationFieldFormat = zerolog.DurationFormatString }

// newLogger writes console lines on a terminal and JSON otherwise.
func newLogger(w io.Writer, format, level string) zerolog.Logger {
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok && isTerminal(f) {
			format = "console"
		}
	}
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		lvl = zerolog.InfoLevel
	}
	var out io.Writer = w
	if format == "console" {
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000"}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger()
}

// checkServe runs every check of cfg that needs neither the database nor
// the port: serve runs it before it opens (and so creates) the database,
// and `config check` runs it on the same config, so a config that serve
// refuses fails there too. (Loading the config checked its keys, token
// files and the commands and dirs of its workers.)
func checkServe(cfg *config) error {
	if _, port, err := net.SplitHostPort(cfg.Server.Addr); err != nil || port == "" {
		return usagef("address %q (--addr, QUEUE_ADDR or server.addr) is not HOST:PORT, e.g. 127.0.0.1:8080", cfg.Server.Addr)
	}
	if !loopback(cfg.Server.Addr) && len(cfg.Tokens) == 0 && !cfg.Server.Insecure {
		return usagef("refusing to listen on %s without a token: anyone who reaches it could run and delete jobs; "+
			"set --token (or QUEUE_TOKEN, or [[tokens]] in the config), listen on 127.0.0.1, or pass --insecure", cfg.Server.Addr)
	}
	return checkDB(cfg.Server.DB)
}

// checkDB checks a --db value without opening it: memory, postgres://...,
// or a SQLite file in a directory that exists.
func checkDB(dsn string) error {
	switch {
	case dsn == "memory", strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return nil
	case strings.Contains(dsn, "://"):
		return usagef("--db %q: unsupported; give a SQLite file path, postgres://..., or memory", redactDSN(dsn))
	}
	dir := filepath.Dir(dsn)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return usagef("--db %s: the directory %s does not exist; create it or give another path", dsn, dir)
	}
	return nil
}

// loopback reports whether addr listens only on this host.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func serve(c *cli.Context, b Build) error {
	cfg, err := serveConfig(c)
	if err != nil {
		return err
	}
	log := newLogger(c.App.ErrWriter, cfg.Server.LogFormat, cfg.Server.LogLevel)
	warnReadableTokens(log, cfg.Path)
	if err := checkServe(cfg); err != nil {
		return err
	}
	ctx := c.Context
	start := time.Now()
	// The port before the database: a server that cannot listen leaves no
	// new database file behind.
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another server running? pick another --addr)", cfg.Server.Addr, err)
	}
	store, svc, metrics, err := openService(ctx, cfg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer store.Close()
	stopTracing, err := startTracing(cfg, svc, b.Version, log) // config_tracing.go; nothing without an endpoint
	if err != nil {
		ln.Close()
		return err
	}
	defer stopTracing() // the last spans, after the workers' outcomes

	// Settings changed at runtime before the server answers (and the
	// scheduler starts): they win over the file's (app.Config.Queue).
	if err := svc.ReloadSettings(ctx); err != nil {
		log.Warn().Err(err).Msg("runtime settings")
	}
	sched := &app.Scheduler{Service: svc}
	if err := sched.Start(ctx); err != nil {
		ln.Close()
		return fmt.Errorf("periodic jobs: %w", err)
	}
	srv := httpServer(cfg, svc, sched, metrics, ln.Addr().String(), b.Version, log)

	// Background work: maintenance every second, retention on its cron
	// schedule, periodic jobs, built-in workers. With PostgreSQL only the
	// node holding the leader lock runs the first three.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	leader := leaderFunc(store)
	wg.Add(2)
	go func() {
		defer wg.Done()
		leader(bg, log, func(lctx context.Context) { lead(lctx, cfg, svc, sched, log) })
	}()
	go func() { defer wg.Done(); svc.RunSettingsReload(bg, app.SettingsReloadEvery) }() // every node: changes made on others

	pools, err := startWorkers(bg, svc, cfg, log)
	if err == nil {
		pools, err = startWebhooks(bg, svc, cfg, b.Version, log, pools) // this node's webhook deliveries
	}
	if err != nil {
		stopBG()
		ln.Close()
		return err
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info().Str("addr", "http://"+ln.Addr().String()).Str("db", redactDSN(cfg.Server.DB)).Str("version", b.Version).
		Int("workers", len(pools)).Dur("started_in", time.Since(start).Round(time.Millisecond)).Msg("queue serving")
	notifySystemd("READY=1\nSTATUS=serving on " + ln.Addr().String())
	stopWatchdog := startWatchdog(bg, store)
	defer stopWatchdog()

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			stopBG()
			wg.Wait()
			return fmt.Errorf("http server: %w", err)
		}
	}
	shutdown(log, svc, srv, func() {
		stopWorkers(pools, cfg.Server.Grace.D(), log)
		stopBG()
		wg.Wait()
	})
	if err := store.Close(); err != nil {
		log.Warn().Err(err).Msg("closing the store")
	}
	log.Info().Msg("stopped")
	return nil
}

// shutdown stops taking work in order: long polls answer at once, the HTTP
// server finishes the requests in flight (up to 10s), then stopWork lets
// the built-in workers finish within their grace and ends the background work.
func shutdown(log zerolog.Logger, svc *app.Service, srv *http.Server, stopWork func()) {
	log.Info().Msg("shutting down: no new work; running jobs may finish")
	notifySystemd("STOPPING=1")
	svc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn().Err(err).Msg("http shutdown")
	}
	stopWork()
}

// openService opens the store of cfg and the Service over it, with the
// metrics that observe both (the store's write timings included).
func openService(ctx context.Context, cfg *config, log zerolog.Logger) (app.Store, *app.Service, *ui.Metrics, error) {
	bus := app.NewBus()
	clock := app.SystemClock{}
	var metrics *ui.Metrics
	scfg := cfg.serviceConfig()
	opts := app.StoreOptions{Clock: clock, Bus: bus, Log: log.With().Str("component", "store").Logger(),
		ObserveWrite: func(n int, d time.Duration) {
			if metrics != nil {
				metrics.ObserveWrite(n, d)
			}
		},
		KeyLimits: scfg.KeyLimits,    // the stores hold keyed jobs back by the queue's key_concurrency, key_rate and fairness
		Capped:    scfg.Capped,       // a completion wakes the claimers of a queue with a concurrency limit only
		Webhooks:  scfg.WebhookRules, // the stores insert the deliveries of each write's events (app.Settle)
	}
	store, err := OpenStore(ctx, cfg.Server.DB, cfg.Server.Sync, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	svc := app.NewService(store, scfg, clock, bus, log.With().Str("component", "service").Logger())
	metrics = ui.NewMetrics(svc, cfg.metricLabels()...)
	return store, svc, metrics, nil
}

// httpServer is the API and the pages on their timeouts: a client that
// sends its headers slowly holds a goroutine for seconds, not forever.
func httpServer(cfg *config, svc *app.Service, sched *app.Scheduler, metrics *ui.Metrics, addr, version string, log zerolog.Logger) *http.Server {
	return &http.Server{
		Handler: ui.New(ui.Options{
			Service: svc, Log: log.With().Str("component", "http").Logger(), Tokens: cfg.uiTokens(),
			PrivateHealth: cfg.Server.PublicHealth != nil && !*cfg.Server.PublicHealth, PublicMetrics: cfg.Server.PublicMetrics,
			MaxBodyBytes: cfg.Server.MaxBodyBytes, Metrics: metrics.Handler(), Scheduler: sched, Version: version,
			ListenAddr: addr, AllowedHosts: cfg.Server.AllowedHosts,
			TrustedProxies: cfg.Server.TrustedProxies, MaxStreams: cfg.Server.MaxStreams, AuthFailed: metrics.AuthFailed,
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      90 * time.Second, // long polls hold an answer up to 60s
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// lead is the work of the leading node until ctx ends: the maintenance
// loop, periodic jobs, and retention passes on their cron schedule.
func lead(ctx context.Context, cfg *config, svc *app.Service, sched *app.Scheduler, log zerolog.Logger) {
	maint := &app.Maintainer{Service: svc}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); maint.Run(ctx, cfg.Maintenance.Interval.D()) }()
	go func() { defer wg.Done(); sched.Run(ctx) }()
	go func() { defer wg.Done(); sweepKeys(ctx, svc.Store, keySweepEvery, log) }()
	sweeps := cron.New(cron.WithLogger(cron.DiscardLogger))
	spec := cfg.Maintenance.Retention
	if spec == "" {
		spec = "@every 1m"
	}
	if _, err := sweeps.AddFunc(spec, func() {
		if _, err := maint.Sweep(ctx); err != nil && ctx.Err() == nil {
			log.Error().Err(err).Msg("retention pass failed")
		}
	}); err != nil {
		log.Error().Err(err).Str("schedule", spec).Msg("retention schedule")
	}
	sweeps.Start()
	<-ctx.Done()
	<-sweeps.Stop().Done()
	wg.Wait()
}

// keySweepEvery is how often the leader sweeps the keys holding jobs back.
const keySweepEvery = time.Minute

// sweepKeys runs app.SweepKeys at once and then every interval until ctx
// ends: it releases the held jobs that a key limit raised or lifted in the
// config (or a release missed) gives room for.
func sweepKeys(ctx context.Context, w app.Writer, interval time.Duration, log zerolog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := app.SweepKeys(ctx, w, 1000)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Error().Err(err).Msg("key sweep failed")
		case n > 0:
			log.Info().Int("jobs", n).Msg("key sweep released held jobs")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// redactDSN hides a password in a postgres:// address for the logs.
func redactDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		if at := strings.LastIndex(dsn, "@"); at > i {
			if colon := strings.Index(dsn[i+3:at], ":"); colon >= 0 {
				return dsn[:i+3+colon] + ":***" + dsn[at:]
			}
		}
	}
	return dsn
}
