package commands

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md from the commands' help")

// docs/cli.md is the help of every command; this test keeps it current
// (`go test ./commands -run CLIReference -update` rewrites it).
func TestCLIReferenceIsCurrent(t *testing.T) {
	var doc bytes.Buffer
	doc.WriteString("# Command line\n\n")
	doc.WriteString("`queue` is one binary with these commands. Every flag also reads an environment\n" +
		"variable (shown in `[$QUEUE_...]`). Exit codes: 0 ok, 1 failure, 2 usage error (the\n" +
		"message names the problem and the fix). Commands that talk to a server take\n" +
		"`--server` (`QUEUE_SERVER`, default `http://127.0.0.1:8080`) and `--token`\n" +
		"(`QUEUE_TOKEN`); read commands take `--json` for machine output and print aligned\n" +
		"tables otherwise. Flags may come before or after arguments; everything after `--`\n" +
		"is passed on untouched (`queue work ... -- COMMAND ARGS`).\n\n" +
		"Shell completion: `queue completion bash > /etc/bash_completion.d/queue`.\n\n" +
		"This page is generated from `queue <command> --help`.\n")
	a := newApp(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}, Build{})
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			path := append(append([]string{}, prefix...), c.Name)
			var out, errb bytes.Buffer
			Run(t.Context(), append(append([]string{"queue"}, path...), "--help"), strings.NewReader(""), &out, &errb, Build{})
			fmt.Fprintf(&doc, "\n## queue %s\n\n```\n%s```\n", strings.Join(path, " "), strings.TrimLeft(out.String(), "\n"))
			walk(path, c.Subcommands)
		}
	}
	walk(nil, a.Commands)
	const path = "../docs/cli.md"
	if *update {
		if err := os.WriteFile(path, doc.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(old, doc.Bytes()) {
		t.Fatalf("docs/cli.md is not the current help: run `go test ./commands -run CLIReference -update`")
	}
}
