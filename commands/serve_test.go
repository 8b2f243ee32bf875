package commands

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

// parseServe runs serveConfig on `queue serve args...`.
func parseServe(t *testing.T, args ...string) (*config, error) {
	t.Helper()
	cmd := serveCommand(Build{})
	var cfg *config
	var err error
	cmd.Action = func(c *cli.Context) error { cfg, err = serveConfig(c); return nil }
	a := &cli.App{Commands: []*cli.Command{cmd}, Writer: &bytes.Buffer{}, ErrWriter: &bytes.Buffer{}}
	if rerr := a.RunContext(t.Context(), append([]string{"queue", "serve"}, args...)); rerr != nil {
		t.Fatalf("queue serve %s: %v", strings.Join(args, " "), rerr)
	}
	return cfg, err
}

// --token-file (QUEUE_TOKEN_FILE) gives the default token from a file,
// trimmed and checked like --token, and not together with --token.
func TestServeTokenFile(t *testing.T) {
	const secret = "0123456789abcdef-token"
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	os.WriteFile(good, []byte(secret+"\n"), 0o600)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("0123456789\n"), 0o600)

	cfg, err := parseServe(t, "--token-file", good)
	if err != nil || len(cfg.Tokens) != 1 || cfg.Tokens[0].Name != "default" || cfg.Tokens[0].Token != secret {
		t.Fatalf("--token-file: tokens %+v, err %v; want the default token from the file", cfg, err)
	}
	t.Setenv("CRED_DIR", dir)
	t.Setenv("QUEUE_TOKEN_FILE", "${CRED_DIR}/token")
	if cfg, err := parseServe(t); err != nil || len(cfg.Tokens) != 1 || cfg.Tokens[0].Token != secret {
		t.Fatalf("QUEUE_TOKEN_FILE with ${CRED_DIR}: %+v, %v", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--token", "0123456789abcdef", "--token-file", good}, "both give the default token: keep one"},
		{[]string{"--token-file", short}, "--token-file: the token in " + short + " is too short"},
		{[]string{"--token-file", filepath.Join(dir, "nope")}, "--token-file: open " + filepath.Join(dir, "nope") + ": no such file"},
	} {
		_, err := parseServe(t, tc.args...)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
			t.Errorf("queue serve %s: %v, want a usage error saying %q", strings.Join(tc.args, " "), err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "0123456789") {
			t.Errorf("queue serve %s: the error shows the token: %v", strings.Join(tc.args, " "), err)
		}
	}
}

// --allowed-hosts (QUEUE_ALLOWED_HOSTS, comma-separated) adds to the
// config's allowed_hosts; a bad entry is a usage error.
func TestServeAllowedHosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queue.toml")
	os.WriteFile(path, []byte("[server]\nallowed_hosts = [\"a.example.com\"]\n"), 0o600)
	cfg, err := parseServe(t, "--config", path, "--allowed-hosts", "b.example.com,*.c.example.com", "--allowed-hosts", "192.0.2.7")
	if got := strings.Join(cfg.Server.AllowedHosts, " "); err != nil || got != "a.example.com b.example.com *.c.example.com 192.0.2.7" {
		t.Fatalf("allowed hosts %q, %v", got, err)
	}
	t.Setenv("QUEUE_ALLOWED_HOSTS", "queue.example.com, *.example.org")
	if cfg, err := parseServe(t); err != nil || strings.Join(cfg.Server.AllowedHosts, " ") != "queue.example.com *.example.org" {
		t.Fatalf("QUEUE_ALLOWED_HOSTS: %+v, %v", cfg, err)
	}
	if _, err := parseServe(t, "--allowed-hosts", "queue.example.com:8080"); err == nil || !strings.Contains(err.Error(), "--allowed-hosts: allowed host \"queue.example.com:8080\": give the host without the port") {
		t.Fatalf("--allowed-hosts host:port: %v", err)
	}
}

// A config file holding an inline token or webhook secret and readable by
// group or others gets a warning naming what it holds and the fix; a 0600
// file or one with token_file or secret files only does not.
func TestWarnReadableTokens(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "t"), []byte("0123456789abcdef\n"), 0o600)
	const (
		tokens  = "config file holding tokens is readable by others"
		secrets = "config file holding webhook secrets is readable by others"
		both    = "config file holding tokens and webhook secrets is readable by others"
		sub     = "[[webhooks.subscriptions]]\nname = \"a\"\nurl = \"https://h.example/\"\nevents = [\"*\"]\n"
	)
	for _, tc := range []struct {
		name, text string
		mode       os.FileMode
		want       string // the warning; "" for none
	}{
		{"inline 0644", "[[tokens]]\nname = \"a\"\ntoken = \"0123456789abcdef\"\n", 0o644, tokens},
		{"inline 0640", "[[tokens]]\nname = \"a\"\ntoken = \"0123456789abcdef\"\n", 0o640, tokens},
		{"inline 0600", "[[tokens]]\nname = \"a\"\ntoken = \"0123456789abcdef\"\n", 0o600, ""},
		{"token_file 0644", "[[tokens]]\nname = \"a\"\ntoken_file = \"t\"\n", 0o644, ""},
		{"no tokens 0644", "[server]\naddr = \"127.0.0.1:1\"\n", 0o644, ""},
		{"callback_secret 0644", "[webhooks]\ncallback_secret = \"cb-secret-0123456789\"\n", 0o644, secrets},
		{"subscription secret 0604", sub + "secret = \"sub-secret-0123456789\"\n", 0o604, secrets},
		{"subscription secret 0600", sub + "secret = \"sub-secret-0123456789\"\n", 0o600, ""},
		{"secret files 0644", "[webhooks]\ncallback_secret_file = \"t\"\n" + sub + "secret_file = \"t\"\n", 0o644, ""},
		{"both 0644", "[[tokens]]\nname = \"a\"\ntoken = \"0123456789abcdef\"\n" + sub + "secret = \"sub-secret-0123456789\"\n", 0o644, both},
	} {
		path := filepath.Join(dir, "queue.toml")
		os.WriteFile(path, []byte(tc.text), 0o600)
		os.Chmod(path, tc.mode)
		var out bytes.Buffer
		warnReadableTokens(zerolog.New(&out), path)
		got := out.String()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: log %q, want %q", tc.name, got, tc.want)
		}
		if tc.want != "" && !strings.Contains(got, `"fix":"chmod 600 `+path) {
			t.Errorf("%s: log %q does not name the fix", tc.name, got)
		}
		if strings.Contains(got, "0123456789") {
			t.Errorf("%s: the log shows the token or the secret: %q", tc.name, got)
		}
	}
}

// serve logs the warning once its logger is made, and a token from
// --token-file counts as a token for a non-loopback address.
func TestServeWarnsAndTakesTokenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "queue.toml")
	os.WriteFile(path, []byte("[[tokens]]\nname = \"ops\"\ntoken = \"0123456789abcdef\"\n"), 0o600)
	os.Chmod(path, 0o644)
	tok := filepath.Join(dir, "token")
	os.WriteFile(tok, []byte("0123456789abcdef-x\n"), 0o600)
	var out, errb bytes.Buffer
	code := Run(t.Context(), []string{"queue", "serve", "--config", path, "--db", "mysql://x", "--log-format", "json"}, strings.NewReader(""), &out, &errb, Build{})
	if code != 2 || !strings.Contains(errb.String(), `"message":"config file holding tokens is readable by others"`) || !strings.Contains(errb.String(), `"mode":"0644"`) {
		t.Errorf("serve with a 0644 config holding a token: exit %d, stderr %q; want the warning", code, errb.String())
	}
	errb.Reset()
	code = Run(t.Context(), []string{"queue", "serve", "--addr", "10.1.2.3:8080", "--token-file", tok, "--db", "mysql://x"}, strings.NewReader(""), &out, &errb, Build{})
	if code != 2 || !strings.Contains(errb.String(), "unsupported") {
		t.Errorf("serve --addr 10.1.2.3:8080 --token-file: exit %d, stderr %q; want it past the token check", code, errb.String())
	}
}
