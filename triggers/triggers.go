// Package triggers holds the status-guard SQL of the SQLite and PostgreSQL
// stores: the database itself refuses a status outside the four, the value
// dead_letter, an insert that is not queued and every illegal transition,
// whoever writes (the server, a script, a person in the sqlite3 shell). The
// Go twin of these rules is app.Transition; change them together.
package triggers

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed sqlite/*.sql postgres/*.sql
var files embed.FS

// SQLite returns the SQLite guard statements, file by file in name order.
// Each file drops and recreates its triggers, so stores run them at every
// start, after the migrations, in one transaction: an upgrade replaces an
// older guard.
func SQLite() []string { return read("sqlite") }

// Postgres returns the PostgreSQL guard statements, file by file in name order.
func Postgres() []string { return read("postgres") }

func read(dir string) []string {
	names, err := fs.Glob(files, dir+"/*.sql")
	if err != nil {
		panic(err) // the pattern is constant
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		b, err := files.ReadFile(n)
		if err != nil {
			panic(err) // embedded, so present
		}
		out = append(out, string(b))
	}
	return out
}
