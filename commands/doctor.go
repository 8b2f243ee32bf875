package commands

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/queuehq/queue/app"
)

// printReport writes a doctor's report for a person.
func printReport(w io.Writer, r *app.Report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "database\t%s (%d KiB, WAL %d KiB)\n", r.Path, r.SizeBytes>>10, r.WALBytes>>10)
	fmt.Fprintf(tw, "schema\t%s\n", r.SchemaVersion)
	fmt.Fprintf(tw, "integrity\t%s\n", r.Integrity)
	fmt.Fprintf(tw, "oldest claimable job\t%s\n", (time.Duration(r.OldestClaimable) * time.Second).String())
	fmt.Fprintf(tw, "dead-lettered\t%d in the last 24h, %d the day before\n", r.DLQLastDay, r.DLQDayBefore)
	fmt.Fprintf(tw, "stuck leases\t%d\n", r.StuckLeases)
	fmt.Fprintf(tw, "blocked workflows\t%d\n", r.BlockedWorkflows)
	tw.Flush()
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tQUEUED\tSCHEDULED\tPROCESSING\tDONE\tCANCELLED\tDEAD LETTER")
	for _, q := range r.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\n", q.Queue, q.Queued, q.Scheduled, q.Processing, q.Done, q.Cancelled, q.DeadLetter)
	}
	tw.Flush()
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "no problems found")
	}
	for _, p := range r.Problems {
		fmt.Fprintln(w, "PROBLEM:", p)
	}
}
