package commands_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// The unit's sandbox also holds built-in workers: a filtered system call
// fails with EPERM instead of killing the job, and a drop-in shipped with
// the package shows how to relax the sandbox for a runtime.
func TestUnitSandboxSuitsWorkers(t *testing.T) {
	unit, err := os.ReadFile("../packaging/queue.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SystemCallErrorNumber=EPERM", "sandbox-runtime.conf"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("packaging/queue.service lacks %q", want)
		}
	}
	dropIn, err := os.ReadFile("../packaging/sandbox-runtime.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(dropIn), "[Service]\n") || !strings.Contains(string(dropIn), "\nMemoryDenyWriteExecute=no\n") {
		t.Errorf("packaging/sandbox-runtime.conf is not a drop-in relaxing MemoryDenyWriteExecute:\n%s", dropIn)
	}
	modes := nfpmModes(t)
	for _, dst := range []string{
		"/usr/share/doc/queue/examples/sandbox-runtime.conf",
		"/usr/share/doc/queue/copyright",
		"/usr/share/doc/queue/changelog.gz",
		"/usr/share/man/man1/queue.1.gz",
		"/usr/share/lintian/overrides/queue",
	} {
		if modes[dst] != 0o644 {
			t.Errorf("packaging/nfpm.yaml does not ship %s 0644 (have %v)", dst, modes)
		}
	}
}

// packaging/version.sh gives versions that sort as the commits do: by
// commit time, above the release they follow, below the next, and above
// the old 0.0.0+<commit> versions.
func TestPackageVersionsSort(t *testing.T) {
	for _, tool := range []string{"git", "dpkg"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	script, err := filepath.Abs("../packaging/version.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	git := func(date string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date,
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := func() string {
		t.Helper()
		cmd := exec.Command("sh", script)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	git("", "init", "-q")
	var got []string
	for i, date := range []string{"2026-03-01T10:00:00Z", "2026-03-02T09:00:00Z", "2026-03-02T09:00:05Z"} {
		git(date, "commit", "-q", "--allow-empty", "-m", fmt.Sprint(i))
		got = append(got, version())
	}
	git("2026-03-03T00:00:00Z", "tag", "v0.1.0")
	got = append(got, version()) // the tagged commit: 0.1.0
	git("2026-03-04T00:00:00Z", "commit", "-q", "--allow-empty", "-m", "after")
	got = append(got, version(), "0.1.1")
	if !regexp.MustCompile(`^0\.0\.0\+git20260301100000\.[0-9a-f]{7}$`).MatchString(got[0]) || got[3] != "0.1.0" ||
		!strings.HasPrefix(got[4], "0.1.0+git20260304000000.") {
		t.Fatalf("versions %q", got)
	}
	// Old-style versions first: any of them sorts below the new ones.
	chain := append([]string{"0.0.0+4fa1cc4", "0.0.0+fffffff"}, got...)
	for i := 1; i < len(chain); i++ {
		if err := exec.Command("dpkg", "--compare-versions", chain[i-1], "lt", chain[i]).Run(); err != nil {
			t.Errorf("%s does not sort below %s (all: %q)", chain[i-1], chain[i], chain)
		}
	}
}
