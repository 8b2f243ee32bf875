package sqlite

import (
	"syscall"

	assets "github.com/queuehq/queue/embed"
)

func umask(mask int) int { return syscall.Umask(mask) }

func migrationNames() []string {
	var out []string
	for _, m := range assets.Migrations("sqlite") {
		out = append(out, m.Name)
	}
	return out
}
