package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every command's --help shows an example, and every flag has an
// environment variable (except --help, --json and the confirmations).
func TestEveryCommandHasAnExampleAndEnvVars(t *testing.T) {
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, Build{})
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := append(append([]string{}, prefix...), c.Name)
			var out, errb bytes.Buffer
			code := Run(t.Context(), append(append([]string{"queue"}, path...), "--help"), strings.NewReader(""), &out, &errb, Build{})
			if code != 0 || !strings.Contains(out.String(), "Example") {
				t.Errorf("queue %s --help: exit %d, no example:\n%s%s", strings.Join(path, " "), code, out.String(), errb.String())
			}
			for _, f := range c.Flags {
				if ev, ok := f.(interface{ GetEnvVars() []string }); ok && len(ev.GetEnvVars()) == 0 {
					t.Errorf("queue %s --%s has no environment variable", strings.Join(path, " "), f.Names()[0])
				}
			}
			walk(path, c.Subcommands)
		}
	}
	walk(nil, a.Commands)
}

// takesArguments names real commands only, so a renamed command cannot
// quietly lose its arguments (noArguments would refuse them).
func TestTakesArgumentsNamesRealCommands(t *testing.T) {
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, Build{})
	leaves := map[string]bool{}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if len(c.Subcommands) == 0 {
				leaves[prefix+" "+c.Name] = true
			}
			walk(prefix+" "+c.Name, c.Subcommands)
		}
	}
	walk("queue", a.Commands)
	for name := range takesArguments {
		if !leaves[name] {
			t.Errorf("takesArguments names %q, which is not a command", name)
		}
	}
}
