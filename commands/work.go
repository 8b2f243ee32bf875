package commands

import "github.com/urfave/cli/v2"

func workCommand() *cli.Command {
	return &cli.Command{
		Name:      "work",
		Usage:     "run a command for each job of a queue, pulling over HTTP",
		UsageText: "queue work --server URL --queue Q [--kind K]... [--concurrency N] -- COMMAND ARGS...",
		Action: func(c *cli.Context) error {
			return usagef("queue work is not in this build yet")
		},
	}
}
