// Package assets holds what the binary carries with it: the schema
// migrations of each store, the web UI's templates and its static files.
// Import it as assets; it has no logic beyond listing files in order.
package assets

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed migrations
var migrations embed.FS

// Migration is one numbered schema change, applied once in name order.
type Migration struct {
	Name string // e.g. "0001_jobs.sql", recorded in schema_migrations
	SQL  string
}

// Migrations returns the migrations of dialect ("sqlite" or "postgres") in order.
func Migrations(dialect string) []Migration {
	names, err := fs.Glob(migrations, "migrations/"+dialect+"/*.sql")
	if err != nil {
		panic(err) // the pattern is constant
	}
	sort.Strings(names)
	out := make([]Migration, 0, len(names))
	for _, n := range names {
		b, err := migrations.ReadFile(n)
		if err != nil {
			panic(err) // embedded, so present
		}
		out = append(out, Migration{Name: n[len("migrations/"+dialect+"/"):], SQL: string(b)})
	}
	return out
}
