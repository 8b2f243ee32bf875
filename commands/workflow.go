package commands

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
)

// maxWorkflowFile is the largest workflow file submit reads: the server's
// cap on POST /api/workflows (ui.workflowBody).
const maxWorkflowFile = 16 << 20

func workflowCommand() *cli.Command {
	return &cli.Command{
		Name:  "workflow",
		Usage: "submit, show, list and cancel workflows (jobs that depend on jobs)",
		UsageText: "queue workflow submit|get|list|cancel\n\nExamples:\n  queue workflow submit etl.json\n  queue workflow get 7\n" +
			"  queue workflow list --status blocked\n  queue workflow cancel 7",
		Subcommands: []*cli.Command{
			{
				Name:  "submit",
				Usage: "submit a workflow from a JSON file (- for stdin); prints its id, then each step's job or waiting",
				UsageText: "queue workflow submit FILE|- [--json]\n\n" +
					"FILE holds the body of POST /api/workflows: {\"name\", \"tags\", \"steps\": [{\"step\", \"depends_on\", and a job\n" +
					"as `queue submit` takes it: \"queue\", \"kind\", \"payload\", ...}], \"callback\"} (see docs/workflows.md). The whole\n" +
					"workflow is stored or none of it. The first line printed is the workflow's id, then a line per step: its\n" +
					"job's id, or waiting while a dependency is unfinished.\n\n" +
					"Examples:\n  queue workflow submit etl.json\n  id=$(queue workflow submit etl.json | head -1)\n  generate-batch | queue workflow submit - --json",
				Flags:  withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action: workflowSubmit,
			},
			{
				Name:      "get",
				Usage:     "show a workflow: status, counts, each step's state, the critical path",
				UsageText: "queue workflow get ID [--json]\n\nExamples:\n  queue workflow get 7\n  queue workflow get 7 --json | jq '.steps[] | select(.status == \"dead_letter\")'",
				Flags:     withFlags(serverFlags(), []cli.Flag{jsonFlag()}),
				Action:    workflowGet,
			},
			{
				Name:      "list",
				Usage:     "list workflows, newest first",
				UsageText: "queue workflow list [--status S] [--name TEXT] [--limit N] [--cursor C] [--json]\n\nExamples:\n  queue workflow list\n  queue workflow list --status blocked --json",
				Flags: withFlags(serverFlags(), []cli.Flag{
					&cli.StringFlag{Name: "status", Usage: "running, blocked, done or cancelled"},
					&cli.StringFlag{Name: "name", Usage: "only workflows whose name contains this text"},
					&cli.IntFlag{Name: "limit", Value: 50}, &cli.StringFlag{Name: "cursor", Usage: "next_cursor of the previous page"},
					jsonFlag(),
				}),
				Action: workflowList,
			},
			{
				Name:  "cancel",
				Usage: "cancel a workflow's unfinished steps; asks first",
				UsageText: "queue workflow cancel ID [--dry-run] [--yes] [--json]\n\n" +
					"Waiting steps and queued jobs are cancelled, running ones asked to stop (their workers see it at the next\n" +
					"heartbeat), and no step runs afterwards. Asks on a terminal before it cancels; elsewhere (cron, CI, a pipe)\n" +
					"it needs --yes.\n\n" +
					"Examples:\n  queue workflow cancel 7\n  queue workflow cancel 7 --dry-run\n  queue workflow cancel 7 --yes",
				Flags: withFlags(serverFlags(), []cli.Flag{jsonFlag(),
					&cli.BoolFlag{Name: "dry-run", Usage: "only count the unfinished steps it would cancel"},
					&cli.BoolFlag{Name: "yes", Aliases: []string{"y"}, Usage: "do not ask to confirm (needed when stdin is not a terminal)"}}),
				Action: workflowCancel,
			},
		},
	}
}

// workflowSubmit submits the workflow in the file (or stdin) the argument
// names and prints its id and each step's job (or waiting).
func workflowSubmit(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("give one workflow file, or - for stdin, e.g. `queue workflow submit etl.json`")
	}
	name := c.Args().First()
	var r io.Reader = c.App.Reader
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return usagef("workflow file: %v", err)
		}
		defer f.Close()
		r = f
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxWorkflowFile+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if len(raw) > maxWorkflowFile {
		return usagef("%s is over 16 MiB, the server's limit for a workflow: pass large data by reference (a URL, a key) in the payloads", name)
	}
	var in client.WorkflowInput
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return usagef("%s is not a workflow: %s (the format is in docs/workflows.md)", name, strings.TrimPrefix(err.Error(), "json: "))
	}
	wf, err := newClient(c).SubmitWorkflow(c.Context, in)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, wf)
	}
	fmt.Fprintln(c.App.Writer, wf.ID)
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "STEP\tQUEUE\tKIND\tJOB")
	for _, s := range wf.Steps {
		job := "waiting"
		if s.JobID != 0 {
			job = strconv.FormatInt(s.JobID, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Queue, s.Kind, job)
	}
	return tw.Flush()
}

// workflowGet prints a workflow, its steps and its critical path.
func workflowGet(c *cli.Context) error {
	id, err := idArg(c, "workflow")
	if err != nil {
		return err
	}
	wf, err := newClient(c).GetWorkflow(c.Context, id)
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, wf)
	}
	w := c.App.Writer
	tw := table(w)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("id", wf.ID)
	row("name", wf.Name)
	row("status", wf.Status)
	if len(wf.Tags) > 0 {
		row("tags", strings.Join(wf.Tags, ", "))
	}
	row("steps", stepCounts(wf))
	row("created_at", app.FormatTime(wf.CreatedAt)+" ("+age(wf.CreatedAt)+")")
	if wf.FinishedAt != nil {
		row("finished_at", app.FormatTime(*wf.FinishedAt)+" (took "+wf.FinishedAt.Sub(wf.CreatedAt).Round(1e6).String()+")")
	}
	row("critical_path", strings.Join(wf.CriticalPath, " -> "))
	tw.Flush()
	fmt.Fprintln(w)
	tw = table(w)
	fmt.Fprintln(tw, "STEP\tSTATUS\tJOB\tATTEMPTS\tDEPENDS ON\tSTARTED\tFINISHED\tERROR")
	for _, s := range wf.Steps {
		job, started, finished := "-", "-", "-"
		if s.JobID != 0 {
			job = strconv.FormatInt(s.JobID, 10)
		}
		if s.StartedAt != nil {
			started = age(*s.StartedAt)
		}
		if s.FinishedAt != nil {
			finished = age(*s.FinishedAt)
		}
		deps := make([]string, len(s.DependsOn))
		for i, d := range s.DependsOn {
			deps[i] = d.Step
			if d.OnFailure != "" {
				deps[i] += " (" + d.OnFailure + ")"
			}
		}
		depText := strings.Join(deps, ", ")
		if depText == "" {
			depText = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", s.Name, s.Status, job, s.Attempts, depText, started, finished,
			app.TruncateString(firstLine(s.Error), 60))
	}
	return tw.Flush()
}

// stepCounts says how many steps a workflow has, by state: "4 (1 done,
// 1 processing, 2 waiting)".
func stepCounts(wf *client.Workflow) string {
	order := []string{"done", "processing", "queued", "waiting", "dead_letter", "cancelled"}
	n := map[string]int{}
	for _, s := range wf.Steps {
		n[string(s.Status)]++
	}
	var parts []string
	for _, st := range order {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	return fmt.Sprintf("%d (%s)", wf.StepCount, strings.Join(parts, ", "))
}

// workflowList prints a page of workflows, newest first.
func workflowList(c *cli.Context) error {
	page, err := newClient(c).ListWorkflows(c.Context, client.WorkflowListOptions{Status: c.String("status"), Name: c.String("name"),
		Limit: c.Int("limit"), Cursor: c.String("cursor")})
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, page)
	}
	tw := table(c.App.Writer)
	fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tSTEPS\tDONE\tFAILED\tCREATED\tFINISHED")
	for _, w := range page.Workflows {
		finished := "-"
		if w.FinishedAt != nil {
			finished = age(*w.FinishedAt)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\n", w.ID, app.TruncateString(w.Name, 40), w.Status, w.StepCount, w.DoneCount, w.FailedCount, age(w.CreatedAt), finished)
	}
	tw.Flush()
	if page.NextCursor != "" {
		fmt.Fprintf(c.App.ErrWriter, "more: --cursor %s\n", page.NextCursor)
	}
	return nil
}

// workflowCancel cancels a workflow after confirmCount's rule: it reads the
// workflow first to count its unfinished steps, unless --yes says not to
// ask; --dry-run only counts them.
func workflowCancel(c *cli.Context) error {
	id, err := idArg(c, "workflow")
	if err != nil {
		return err
	}
	cl := newClient(c)
	if !c.Bool("yes") || c.Bool("dry-run") {
		wf, err := cl.GetWorkflow(c.Context, id)
		if err != nil {
			return remoteErr(c, err)
		}
		if wf.Status.Finished() {
			return fmt.Errorf("workflow %d is %s: nothing to cancel", id, wf.Status)
		}
		open := 0
		for _, s := range wf.Steps {
			switch s.Status {
			case "done", app.StepDead, app.StepCancelled:
			default:
				open++
			}
		}
		if c.Bool("dry-run") {
			if c.Bool("json") {
				return printJSON(c.App.Writer, app.BulkResult{Count: open, DryRun: true})
			}
			fmt.Fprintf(c.App.Writer, "workflow %d: would cancel %s\n", id, plural(open, "unfinished step"))
			return nil
		}
		// An unfinished workflow has something to cancel even with no
		// unfinished step: blocked by a dead step nothing depends on, the
		// cancel ends it (so retention can take it).
		what := fmt.Sprintf("cancel workflow %d (%s): %s", id, wf.Name, plural(open, "unfinished step"))
		if open == 0 {
			what = fmt.Sprintf("cancel workflow %d (%s), %s with no unfinished step", id, wf.Name, wf.Status)
		}
		ok, err := confirmCount(c, max(open, 1), what, "")
		if !ok {
			return err
		}
	}
	wf, err := cl.CancelWorkflow(c.Context, id)
	if errors.Is(err, client.ErrIllegalTransition) {
		return fmt.Errorf("workflow %d has finished: nothing to cancel", id)
	}
	if err != nil {
		return remoteErr(c, err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, wf)
	}
	cancelled, running := 0, 0
	for _, s := range wf.Steps {
		switch s.Status {
		case app.StepCancelled:
			cancelled++
		case app.StepStatus(app.StatusProcessing):
			running++
		}
	}
	msg := fmt.Sprintf("workflow %d: cancelled; %s cancelled", id, plural(cancelled, "step"))
	if running > 0 {
		msg += fmt.Sprintf(", %s asked to stop (at their next heartbeat)", plural(running, "running step"))
	}
	fmt.Fprintln(c.App.Writer, msg)
	return nil
}
