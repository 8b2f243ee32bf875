package commands_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// nfpmModes maps each dst of packaging/nfpm.yaml's contents to its
// file_info mode. It reads the few lines it needs, not YAML in general.
func nfpmModes(t *testing.T) map[string]os.FileMode {
	t.Helper()
	b, err := os.ReadFile("../packaging/nfpm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dstRE := regexp.MustCompile(`^\s+dst:\s*(\S+)`)
	modeRE := regexp.MustCompile(`^\s+mode:\s*(0[0-7]+)\s*$`)
	modes := map[string]os.FileMode{}
	dst := ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "- src:") {
			dst = ""
		}
		if m := dstRE.FindStringSubmatch(line); m != nil {
			dst = m[1]
		}
		if m := modeRE.FindStringSubmatch(line); m != nil && dst != "" {
			n, _ := strconv.ParseUint(m[1], 8, 32)
			modes[dst] = os.FileMode(n)
		}
	}
	return modes
}

// The config files hold tokens and database passwords: the package and
// `make install` give them to root alone, and the unit hands queue.toml to
// the service's dynamic user as a systemd credential.
func TestPackagingKeepsSecretsPrivate(t *testing.T) {
	modes := nfpmModes(t)
	for _, f := range []string{"/etc/queue/queue.toml", "/etc/default/queue"} {
		m, ok := modes[f]
		if !ok {
			t.Errorf("packaging/nfpm.yaml: no mode for %s (have %v)", f, modes)
		} else if m&0o077 != 0 {
			t.Errorf("packaging/nfpm.yaml: %s is %#o, want 0600 (root only)", f, m)
		}
	}
	if m := modes["/usr/bin/queue"]; m != 0o755 {
		t.Errorf("packaging/nfpm.yaml: /usr/bin/queue is %#o; the parser missed it?", m)
	}

	unit, err := os.ReadFile("../packaging/queue.service")
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(unit), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{
		"LoadCredential=queue.toml:/etc/queue/queue.toml",
		"ExecStart=/usr/bin/queue serve --config %d/queue.toml",
		"EnvironmentFile=-/etc/default/queue",
		"DynamicUser=yes",
	} {
		if !lines[want] {
			t.Errorf("packaging/queue.service lacks the line %q", want)
		}
	}

	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"install -D -m 0600 packaging/queue.toml", "install -D -m 0600 packaging/queue.env.sample"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("Makefile install: lacks %q", want)
		}
	}
}
