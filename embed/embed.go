// Package assets holds what the binary carries with it: the schema
// migrations of each store, the web UI's templates and its static files,
// and the OpenAPI document of the HTTP API.
// Import it as assets; it has no logic beyond listing files in order.
package assets

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed migrations
var migrations embed.FS

//go:embed templates
var templates embed.FS

//go:embed static
var static embed.FS

// OpenAPI is the OpenAPI 3.1 document of every route the server serves,
// answered by GET /api/openapi.json. It is generated, not edited: the ui
// tests build it from their route table (ui/openapi_doc_test.go), fail when
// this file differs, and rewrite it with
// `go test ./ui -run OpenAPI -update`.
//
//go:embed openapi.json
var OpenAPI []byte

// Templates holds the web UI's html/template files (layout.html and one
// file per page), rooted at the templates folder.
var Templates fs.FS = mustSub(templates, "templates")

// Static holds the web UI's CSS, script and icons, served under /static/,
// rooted at the static folder.
var Static fs.FS = mustSub(static, "static")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // the folder is embedded, so present
	}
	return sub
}

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
