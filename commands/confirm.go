package commands

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"
)

// The one rule for commands that destroy or cancel in bulk (dlq purge and
// dlq move with a filter, queues drain, workflow cancel), written once in confirmCount:
//
//   - nothing matches: say so and exit 0, without asking;
//   - --yes: go ahead without asking;
//   - stdin is a terminal: ask, and go ahead only on "y" or "yes"; any
//     other answer changes nothing and exits 1;
//   - stdin is not a terminal (cron, systemd, CI, a pipe, </dev/null):
//     ask nothing, change nothing, exit 2 saying to pass --yes.

// confirmCount applies the rule to an action that would touch n rows,
// described by what ("purge 3 dead-letter rows"). none is the message for
// nothing to do. It reports whether to go ahead; false with a nil error is
// "nothing to do", already said.
func confirmCount(c *cli.Context, n int, what, none string) (bool, error) {
	if n == 0 {
		if c.Bool("json") {
			return false, printJSON(c.App.Writer, map[string]int{"count": 0})
		}
		fmt.Fprintln(c.App.Writer, none)
		return false, nil
	}
	if c.Bool("yes") {
		return true, nil
	}
	if !stdinTerminal(c) {
		return false, usagef("about to %s, but stdin is not a terminal to confirm on: nothing changed; pass --yes to go ahead (--dry-run shows what it would touch)", what)
	}
	fmt.Fprintf(c.App.ErrWriter, "About to %s. Go on? [y/N] ", what)
	line, err := bufio.NewReader(c.App.Reader).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(c.App.ErrWriter)
		return false, cli.Exit("no answer: nothing changed", 1)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, cli.Exit("not confirmed: nothing changed", 1)
}

// stdinTerminal reports whether the command's stdin is a terminal a person
// can answer on (not /dev/null, a pipe or a file).
func stdinTerminal(c *cli.Context) bool {
	f, ok := c.App.Reader.(*os.File)
	return ok && isTerminal(f)
}

// isTerminal reports whether f is a terminal. A character device is not
// enough: /dev/null is one too.
func isTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// plural writes n things: "1 dead-letter row", "3 dead-letter rows".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
