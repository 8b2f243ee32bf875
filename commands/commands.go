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
	"strings"

	"github.com/urfave/cli/v2"
)

// Build describes the binary; main sets it from -ldflags.
type Build struct {
	Version string
	Commit  string
}

// usageError is a mistake in how the command was called: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// Run runs the command line args and returns the exit code: 0 ok,
// 1 failure, 2 usage error.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, b Build) int {
	a := newApp(stdin, stdout, stderr, b)
	err := a.RunContext(ctx, interspersed(a, args))
	if err == nil {
		return 0
	}
	var ue *usageError
	var ec cli.ExitCoder
	switch {
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "queue:", ue.msg)
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
			queuesCommand(),
			statsCommand(),
			auditCommand(),
			workCommand(),
			migrateCommand(),
			migrateStoreCommand(),
			backupCommand(),
			doctorCommand(),
			configCommand(),
			versionCommand(b),
			completionCommand(),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q; see `queue --help`", c.Args().First())
			}
			cli.ShowAppHelp(c)
			return usagef("give a command, e.g. `queue serve`")
		},
		ExitErrHandler: func(c *cli.Context, err error) {}, // Run reports errors and picks exit codes
	}
	var walk func(cmds []*cli.Command, path string)
	walk = func(cmds []*cli.Command, path string) {
		for _, c := range cmds {
			c.OnUsageError = onUsageError(path + " " + c.Name)
			for _, f := range c.Flags {
				defaultEnv(f)
			}
			walk(c.Subcommands, path+" "+c.Name)
		}
	}
	walk(a.Commands, "queue")
	a.OnUsageError = onUsageError("queue")
	return a
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
		if !strings.HasPrefix(tok, "-") || tok == "-" || !known[strings.SplitN(name, "=", 2)[0]] {
			pos = append(pos, tok)
			continue
		}
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
