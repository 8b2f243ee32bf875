package commands

import "github.com/urfave/cli/v2"

func migrateStoreCommand() *cli.Command {
	return &cli.Command{
		Name:      "migrate-store",
		Usage:     "copy every job, dead-letter row and queue state from one store to another",
		UsageText: "queue migrate-store --from queue.db --to postgres://...",
		Action: func(c *cli.Context) error {
			return usagef("queue migrate-store is not in this build yet")
		},
	}
}
