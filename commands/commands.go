// Package commands is the `queue` command line (urfave/cli/v2): serve, the
// client commands that talk to a server over HTTP, the worker, and the
// commands that work on a database file directly. main only calls Run.
package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
)

// Build describes the binary; main sets it from -ldflags.
type Build struct {
	Version string
	Commit  string
}

// fromBuildInfo fills what -ldflags did not set from what the Go
// toolchain recorded: the module version of `go install
// github.com/queuehq/queue@v1.2.3`, and the commit of a build from a clone.
func (b Build) fromBuildInfo() Build {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if (b.Version == "" || b.Version == "dev") && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && b.Commit == "" {
			b.Commit = s.Value[:min(len(s.Value), 7)]
		}
	}
	return b
}

// usageError is a mistake in how the command was called: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Run runs the command line args and returns the exit code: 0 ok,
// 1 failure, 2 usage error (a wrong flag, argument or config file).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, b Build) int {
	a := newApp(stdin, stdout, stderr, b)
	err := a.RunContext(ctx, interspersed(a, args))
	if err == nil {
		return 0
	}
	var ue *usageError
	var ce *configError
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "queue:", ue.msg)
		return 2
	case errors.As(err, &ce): // a config serve refuses is a usage error, like a bad flag
		fmt.Fprintln(stderr, "queue:", err)
		return 2
	case errors.As(err, &ec):
		if msg := strings.TrimSpace(ec.Error()); msg != "" {
			fmt.Fprintln(stderr, "queue:", msg)
		}
		return ec.ExitCode()
	}
	fmt.Fprintln(stderr, "queue:", err)
	return 1
}

func newApp(stdin io.Reader, stdout, stderr io.Writer, b Build) *cli.App {
	b = b.fromBuildInfo()
	if b.Version == "" {
		b.Version = "dev"
	}
	a := &cli.App{
		Name:      "queue",
		Usage:     "a durable job queue in one binary",
		UsageText: "queue <command> [flags]\n\nExamples:\n  queue serve\n  queue submit --kind email.send --payload '{\"to\":\"a@example.com\"}'\n  queue work --queue default -- ./handle-job.sh",
		Version:   b.Version,
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		Description: "Run `queue serve` to start a server on ./queue.db (SQLite); submit jobs with `queue submit` or curl; " +
			"run workers with `queue work`. Every flag also reads the environment variable shown in its help.",
		EnableBashCompletion: true,
		HideHelpCommand:      true,
		Suggest:              true,
		Commands: []*cli.Command{
			serveCommand(b),
			submitCommand(),
			jobsCommand(),
			dlqCommand(),
			workflowCommand(),
			queuesCommand(),
			periodicCommand(),
			webhooksCommand(), // webhooks.go
			statsCommand(),
			auditCommand(),
			workCommand(),
			workersCommand(), // workers_cli.go
			migrateCommand(),
			migrateStoreCommand(),
			backupCommand(),
			doctorCommand(),
			configCommand(),
			versionCommand(b),
			completionCommand(),
			manCommand(),
		},
		ExitErrHandler: func(c *cli.Context, err error) {}, // Run reports errors and picks exit codes
	}
	a.Action = func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usagef("unknown command %q; the commands are: %s (see `queue --help`)", c.Args().First(), commandNames(a.Commands))
		}
		cli.ShowAppHelp(c)
		return usagef("give a command, e.g. `queue serve`")
	}
	var walk func(cmds []*cli.Command, path string)
	walk = func(cmds []*cli.Command, path string) {
		for _, c := range cmds {
			name := path + " " + c.Name
			c.OnUsageError = onUsageError(name)
			for _, f := range c.Flags {
				defaultEnv(f)
				switch f := f.(type) {
				case *cli.StringFlag:
					if f.Name == "server" {
						c.Before = checkServer
					}
				case *cli.IntFlag:
					if f.Name == "limit" {
						f.Usage, f.Action = "rows per page, 1 to 1000", checkLimit
					}
				}
			}
			switch {
			case len(c.Subcommands) > 0:
				c.Action = unknownSubcommand(name, c)
			case !takesArguments[name] && c.Action != nil:
				c.Action = noArguments(name, c.Action)
			}
			walk(c.Subcommands, name)
		}
	}
	walk(a.Commands, "queue")
	a.OnUsageError = onUsageError("queue")
	return a
}

// commandNames lists the names of cmds a person may type.
func commandNames(cmds []*cli.Command) string {
	var names []string
	for _, c := range cmds {
		if !c.Hidden && c.Name != "help" { // urfave/cli adds help to each group
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}

// unknownSubcommand is the action of a command that only groups others
// (queue jobs, queue config): without one of them, or with a name that is
// none of them, it is a usage error listing them (exit 2).
func unknownSubcommand(name string, parent *cli.Command) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usagef("unknown command %q for `%s`; its commands are: %s (see `%s --help`)",
				c.Args().First(), name, commandNames(parent.Subcommands), name)
		}
		return usagef("`%s` needs one of its commands: %s (see `%s --help`)", name, commandNames(parent.Subcommands), name)
	}
}

// takesArguments are the commands that take arguments (an id, a queue, a
// file, the worker's command) and check them themselves; every other
// command takes flags only, and noArguments refuses an argument.
var takesArguments = map[string]bool{
	"queue submit": true, "queue serve": true, "queue migrate-store": true, // name the mistake themselves
	"queue jobs show": true, "queue jobs cancel": true, "queue jobs logs": true,
	"queue dlq show": true, "queue dlq replay": true, "queue dlq purge": true, "queue dlq move": true,
	"queue queues pause": true, "queue queues resume": true, "queue queues drain": true, "queue queues keys": true,
	"queue queues settings": true, "queue queues set": true, "queue queues reset": true, "queue periodic update": true, // settings.go
	"queue periodic delete": true, "queue periodic pause": true, "queue periodic resume": true, "queue periodic run": true,
	"queue workflow submit": true, "queue workflow get": true, "queue workflow cancel": true,
	"queue workers quiet": true, "queue workers stop": true, // workers_cli.go
	"queue webhooks show": true, "queue webhooks update": true, "queue webhooks remove": true, // webhooks.go
	"queue webhooks deliveries": true, "queue webhooks test": true,
	"queue work": true, "queue backup": true, "queue config check": true, "queue completion": true,
}

// noArguments wraps the action of a command that takes flags only: an
// argument is a usage error, never silently ignored.
func noArguments(name string, action cli.ActionFunc) cli.ActionFunc {
	return func(c *cli.Context) error {
		if c.NArg() > 0 {
			return usagef("`%s` takes no arguments, only flags (got %q); see `%s --help`", name, c.Args().First(), name)
		}
		return action(c)
	}
}

// interspersed moves the flags of the command being run in front of its
// arguments, so `queue jobs show 42 --json` works like `queue jobs show
// --json 42` (urfave/cli/v2 stops reading flags at the first argument).
// Everything after "--" stays as it is: it belongs to the user's command.
func interspersed(a *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	cmds, i := a.Commands, 1
	var cmd *cli.Command
	for i < len(args) {
		var next *cli.Command
		for _, c := range cmds {
			if c.HasName(args[i]) {
				next = c
			}
		}
		if next == nil {
			break
		}
		cmd, cmds, i = next, next.Subcommands, i+1
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	takesValue := map[string]bool{}
	known := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			known[n] = true
			takesValue[n] = !isBool
		}
	}
	var flags, pos []string
	rest := args[i:]
	for j := 0; j < len(rest); j++ {
		tok := rest[j]
		if tok == "--" {
			pos = append(pos, rest[j:]...)
			break
		}
		name := strings.TrimLeft(tok, "-")
		if !strings.HasPrefix(tok, "-") || tok == "-" {
			pos = append(pos, tok)
			continue
		}
		// A flag the command does not know goes in front too, so that
		// urfave/cli names it ("flag provided but not defined: -dry-run").
		flags = append(flags, tok)
		if takesValue[name] && !strings.Contains(name, "=") && j+1 < len(rest) {
			flags = append(flags, rest[j+1])
			j++
		}
	}
	out := append([]string{}, args[:i]...)
	out = append(out, flags...)
	return append(out, pos...)
}

// defaultEnv gives a flag without an environment variable QUEUE_<NAME>, so
// every flag can be set from the environment (SPEC section 7).
func defaultEnv(f cli.Flag) {
	env := []string{"QUEUE_" + strings.ToUpper(strings.ReplaceAll(f.Names()[0], "-", "_"))}
	switch f := f.(type) {
	case *cli.StringFlag:
		if len(f.EnvVars) == 0 {
			f.EnvVars = env
		}
	case *cli.BoolFlag:
		if len(f.EnvVars) == 0 {
			f.EnvVars = env
		}
	case *cli.IntFlag:
		if len(f.EnvVars) == 0 {
			f.EnvVars = env
		}
	case *cli.Float64Flag:
		if len(f.EnvVars) == 0 {
			f.EnvVars = env
		}
	case *cli.DurationFlag:
		if len(f.EnvVars) == 0 {
			f.EnvVars = env
		}
	case *cli.StringSliceFlag:
		if len(f.EnvVars) == 0 {
			f.EnvVars = env
		}
	case *cli.TimestampFlag:
		if len(f.EnvVars) == 0 {
			f.EnvVars = env
		}
	}
}

// onUsageError points a wrong flag at the help of the command it was given
// to, by its whole path (urfave/cli only knows a subcommand's last name).
func onUsageError(name string) cli.OnUsageErrorFunc {
	return func(c *cli.Context, err error, isSub bool) error {
		return usagef("%v (see `%s --help`)", err, name)
	}
}

func versionCommand(b Build) *cli.Command {
	return &cli.Command{
		Name:      "version",
		Usage:     "print version, commit and Go version",
		UsageText: "queue version\n\nExample:\n  queue version",
		Action: func(c *cli.Context) error {
			commit := b.Commit
			if commit == "" {
				commit = "unknown"
			}
			fmt.Fprintf(c.App.Writer, "queue %s (commit %s, %s, %s/%s)\n", b.Version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a bash completion script",
		UsageText: "queue completion bash\n\nExample:\n  queue completion bash > /etc/bash_completion.d/queue",
		Action: func(c *cli.Context) error {
			if c.Args().First() != "bash" {
				return usagef("completion takes one argument: bash")
			}
			fmt.Fprint(c.App.Writer, bashCompletion)
			return nil
		},
	}
}

// manCommand prints the manual page, generated from the commands' own
// help by urfave/cli, so it cannot drift from `--help`. The .deb ships it
// as /usr/share/man/man1/queue.1.gz (make package).
func manCommand() *cli.Command {
	return &cli.Command{
		Name:      "man",
		Usage:     "print the manual page (roff, section 1)",
		UsageText: "queue man\n\nExamples:\n  queue man | man -l -\n  queue man | gzip -9n > /usr/local/share/man/man1/queue.1.gz",
		Action: func(c *cli.Context) error {
			page, err := c.App.ToManWithSection(1)
			if err != nil {
				return err
			}
			_, err = io.WriteString(c.App.Writer, page)
			return err
		},
	}
}

const bashCompletion = `# bash completion for queue
_queue_complete() {
  local cur words
  cur="${COMP_WORDS[COMP_CWORD]}"
  words=$("${COMP_WORDS[0]}" "${COMP_WORDS[@]:1:$COMP_CWORD-1}" --generate-bash-completion 2>/dev/null)
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _queue_complete queue
`

// stateDB is where the database goes by default: $STATE_DIRECTORY/queue.db
// under systemd (StateDirectory=), else queue.db in the working directory.
func stateDB() string {
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		return strings.Split(d, ":")[0] + "/queue.db"
	}
	return "queue.db"
}
