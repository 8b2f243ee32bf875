package commands

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
)

// workersCommand is `queue workers`: the server's registry of worker
// processes (`queue work`, Go programs, the built-in workers), and the
// operator's quiet and stop. (workers.go is the server's built-in workers.)
func workersCommand() *cli.Command {
	oneWorker := func(name, usage, text string, fn func(c *cli.Context, cl *client.Client, id string) (*client.WorkerInfo, error)) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     usage,
			UsageText: "queue workers " + name + " ID [--json]\n\n" + text + "\n\nExample:\n  queue workers " + name + " build-7:4121-a3f09c",
			Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usagef("give one worker id (see `queue workers list`), e.g. `queue workers %s build-7:4121-a3f09c`", name)
				}
				w, err := fn(c, newClient(c), c.Args().First())
				if err != nil {
					return remoteErr(c, err)
				}
				if c.Bool("json") {
					return printJSON(c.App.Writer, w)
				}
				fmt.Fprintf(c.App.Writer, "worker %s told to %s (now %s); it obeys at its next heartbeat or claim\n", w.ID, name, w.State)
				return nil
			},
		}
	}
	return &cli.Command{
		Name:      "workers",
		Usage:     "list the worker processes and quiet or stop one",
		UsageText: "queue workers list|quiet|stop\n\nExamples:\n  queue workers list\n  queue workers quiet build-7:4121-a3f09c\n  queue workers stop build-7:4121-a3f09c",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list the registered workers with their queues, counts and state",
				UsageText: "queue workers list [--json]\n\n" +
					"Every `queue work`, Go worker and built-in worker registers and heartbeats every 5s. STATE is running,\n" +
					"quiet, stopping, or gone (no heartbeat for 15s); gone workers are forgotten after an hour.\n\n" +
					"Example:\n  queue workers list",
				Flags:  withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action: workersList,
			},
			oneWorker("quiet", "tell a worker to claim nothing more and finish what it runs (admin)",
				"The worker finishes its running jobs and stays up, idle; claims under its id get nothing.",
				func(c *cli.Context, cl *client.Client, id string) (*client.WorkerInfo, error) {
					return cl.QuietWorker(c.Context, id)
				}),
			oneWorker("stop", "tell a worker to give its running jobs back and exit (admin)",
				"The worker stops claiming, stops its running jobs and gives them back to the queue without using up\n"+
					"their attempt, then exits 0 (a built-in worker stops; the server runs on).",
				func(c *cli.Context, cl *client.Client, id string) (*client.WorkerInfo, error) {
					return cl.StopWorker(c.Context, id)
				}),
		},
	}
}

// workersList prints the registry: id, host, pid, queues, counts, state
// and when each was last seen.
func workersList(c *cli.Context) error {
	ws, err := newClient(c).Workers(c.Context)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		if ws == nil {
			ws = []*client.WorkerInfo{}
		}
		return printJSON(c.App.Writer, map[string]any{"workers": ws})
	}
	if len(ws) == 0 {
		fmt.Fprintln(c.App.Writer, "no workers registered (workers register when they start: `queue work`, a Go worker, [[workers]] of serve)")
		return nil
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "ID\tHOST\tPID\tQUEUES\tIN FLIGHT\tDONE\tFAILED\tSTATE\tLAST SEEN")
	for _, w := range ws {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d/%d\t%d\t%d\t%s\t%s\n", w.ID, w.Host, w.PID, workerQueues(w), w.InFlight, w.Concurrency,
			w.Done, w.Failed, w.State, age(w.LastSeenAt))
	}
	return tw.Flush()
}

// workerQueues is a worker's queues in the command line's form, with its
// kinds if it takes only some: "critical=6,default=3 (email.send)".
func workerQueues(w *app.Worker) string {
	s := w.Queues.String()
	if len(w.Kinds) > 0 {
		s += " (" + strings.Join(w.Kinds, ",") + ")"
	}
	return s
}
