// Command queue is a durable job queue in one binary: `queue serve` runs the
// HTTP API, the web UI, workers and maintenance on an embedded SQLite file
// (or PostgreSQL); the other commands talk to it or work on its database.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/queuehq/queue/commands"
)

// Set by -ldflags "-X main.version=... -X main.commit=..." (see Makefile).
var (
	version = "dev"
	commit  = ""
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := commands.Run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr, commands.Build{Version: version, Commit: commit})
	stop()
	os.Exit(code)
}
