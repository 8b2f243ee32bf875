package commands

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
		"message names the problem and the fix): a wrong flag or argument, an unknown command\n" +
		"(the message lists the right ones), arguments to a command that takes none, a config\n" +
		"file `serve` would refuse. Commands that talk to a server take `--server`\n" +
		"(`QUEUE_SERVER`, default `http://127.0.0.1:8080`; `HOST:PORT` means `http://HOST:PORT`)\n" +
		"and `--token` (`QUEUE_TOKEN`); read commands take `--json` for machine output and print\n" +
		"aligned tables otherwise; `--limit` is 1 to 1000. Flags may come before or after\n" +
		"arguments; everything after `--` is passed on untouched (`queue work ... -- COMMAND ARGS`).\n\n" +
		"Confirmations, one rule for `dlq purge` and `dlq move` with a filter, `queues drain` and\n" +
		"`workflow cancel`: on a terminal they show the count and ask, and go ahead only on `y`\n" +
		"(another answer changes nothing, exit 1); without a terminal on stdin (cron, systemd, CI,\n" +
		"a pipe) they change nothing and exit 2 asking for `--yes`; with nothing to act on they\n" +
		"say so and exit 0 (but `workflow cancel` of a finished workflow is an error, exit 1, as\n" +
		"the API's 409 is).\n\n" +
		"Shell completion: `queue completion bash > /etc/bash_completion.d/queue`. The manual\n" +
		"page (`man queue` once installed) is `queue man`.\n\n" +
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

// The full example of docs/configuration.md passes `config check` once the
// paths it names exist (here under a temporary directory), and names the
// first missing one before that.
func TestConfigurationExampleChecks(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(doc), "## A full example")
	_, rest, _ = strings.Cut(rest, "```toml\n")
	example, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("docs/configuration.md: no toml block under \"## A full example\"")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "queue.toml")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check := func() (int, string) {
		var out, errb bytes.Buffer
		code := Run(t.Context(), []string{"queue", "config", "check", path}, strings.NewReader(""), &out, &errb, Build{})
		return code, out.String() + errb.String()
	}
	t.Setenv("CREDENTIALS_DIRECTORY", filepath.Join(dir, "credentials"))
	write(example)
	if code, out := check(); code != 2 || !strings.Contains(out, "queue.toml:") {
		t.Fatalf("the example without its files: exit %d, %s; want exit 2 naming a line", code, out)
	}
	// The paths it names, made here.
	os.MkdirAll(filepath.Join(dir, "credentials"), 0o700)
	os.MkdirAll(filepath.Join(dir, "var", "lib", "queue"), 0o700)
	os.WriteFile(filepath.Join(dir, "credentials", "queue-ci-token"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "email-worker.token"), []byte("fedcba9876543210fedcba9876543210\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "send-email"), []byte("#!/bin/sh\n"), 0o755)
	example = strings.NewReplacer(
		`"/var/lib/queue`, `"`+filepath.Join(dir, "var", "lib", "queue"),
		`"/usr/local/bin/send-email"`, `"`+filepath.Join(dir, "send-email")+`"`,
	).Replace(example)
	write(example)
	if code, out := check(); code != 0 || !strings.Contains(out, ": ok (") {
		t.Fatalf("config check of the full example of docs/configuration.md: exit %d\n%s", code, out)
	}
}
