package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// Workflows are three tables (see 0005_workflows.sql): the workflow row,
// a row per step and a row per dependency. The rules are app's (flow.go);
// here each Tx step is one statement, and a submission of any size is one.

// workflowCols is the column list every workflow query selects, in scanWorkflow's order.
const workflowCols = `id, name, tags, status, step_count, done_count, failed_count, created_at, updated_at, finished_at`

func scanWorkflow(row pgx.Row) (*app.Workflow, error) {
	var wf app.Workflow
	var status string
	if err := row.Scan(&wf.ID, &wf.Name, &wf.Tags, &status, &wf.StepCount, &wf.DoneCount, &wf.FailedCount,
		&wf.CreatedAt, &wf.UpdatedAt, &wf.FinishedAt); err != nil {
		return nil, err
	}
	wf.Status, wf.CreatedAt, wf.UpdatedAt, wf.FinishedAt = app.WorkflowStatus(status), wf.CreatedAt.UTC(), wf.UpdatedAt.UTC(), msPtr(wf.FinishedAt)
	if len(wf.Tags) == 0 {
		wf.Tags = nil
	}
	return &wf, nil
}

// stepCols is the column list every step query selects, in scanStep's
// order, each column of alias (if not empty). JSON columns are read as
// text, as jobCols does.
func stepCols(alias string) string {
	if alias != "" {
		alias += "."
	}
	return strings.ReplaceAll(`@workflow_id, @name, @queue, @kind, @depends_on::text, @status, coalesce(@job_id, 0),
		@waiting, @failed, @result::text, @error, @spec::text, @payload::text, @released_at, @finished_at, @position`, "@", alias)
}

// stateCols is stepCols without a step's dependencies and job, which the
// rules deciding a step's end do not read (see app.Tx.Steps).
var stateCols = strings.NewReplacer("depends_on::text", "'[]'", "spec::text", "'{}'", "payload::text", "'null'").Replace(stepCols(""))

// scanStep reads a step from stepCols, then the columns more (if any) into more.
func scanStep(row pgx.Row, more ...any) (*app.WorkflowStep, error) {
	var (
		s                    app.WorkflowStep
		deps, status, spec   string
		payload              string
		result               *string
		releasedAt, finished *time.Time
	)
	dest := []any{&s.WorkflowID, &s.Name, &s.Queue, &s.Kind, &deps, &status, &s.JobID, &s.Waiting, &s.Failed,
		&result, &s.Error, &spec, &payload, &releasedAt, &finished, &s.Position}
	if err := row.Scan(append(dest, more...)...); err != nil {
		return nil, err
	}
	s.Status, s.Result = app.StepStatus(status), rawPtr(result)
	s.ReleasedAt, s.FinishedAt = msPtr(releasedAt), msPtr(finished)
	if err := json.Unmarshal([]byte(deps), &s.DependsOn); err != nil {
		return nil, fmt.Errorf("step %q of workflow %d: depends_on: %w", s.Name, s.WorkflowID, err)
	}
	job, err := app.ParseStepJob(spec, []byte(payload))
	if err != nil {
		return nil, fmt.Errorf("step %q of workflow %d: %w", s.Name, s.WorkflowID, err)
	}
	s.Job = job
	return &s, nil
}

// stepDoc is a step's dependencies and job spec as stored (see
// app.StepJob.Spec).
func stepDoc(s *app.WorkflowStep) (deps, spec string, err error) {
	d := s.DependsOn
	if d == nil {
		d = []app.Dependency{}
	}
	db, err := json.Marshal(d)
	if err != nil {
		return "", "", err
	}
	if spec, err = s.Job.Spec(); err != nil {
		return "", "", fmt.Errorf("step %q: %w", s.Name, err)
	}
	return string(db), spec, nil
}

// InsertWorkflow implements app.Tx.
func (w *wtx) InsertWorkflow(wf *app.Workflow) error {
	err := w.queryRow(`INSERT INTO workflows (name, tags, status, step_count, done_count, failed_count, created_at, updated_at, finished_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
		wf.Name, tags(wf.Tags), string(wf.Status), wf.StepCount, wf.DoneCount, wf.FailedCount, ms(wf.CreatedAt), ms(wf.UpdatedAt), msPtr(wf.FinishedAt)).Scan(&wf.ID)
	if err != nil {
		return fmt.Errorf("insert workflow: %w", err)
	}
	return nil
}

// InsertSteps implements app.Tx: the steps and their edges in one
// statement, rows built from arrays, whatever their number.
func (w *wtx) InsertSteps(wf int64, steps []*app.WorkflowStep, edges []app.WorkflowEdge) error {
	n := len(steps)
	names, queues, kinds, deps, statuses := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	specs, payloads, errTexts := make([]string, n), make([]string, n), make([]string, n)
	results := make([]*string, n)
	jobIDs := make([]*int64, n)
	waiting := make([]int, n)
	failed := make([]bool, n)
	released, finished := make([]*time.Time, n), make([]*time.Time, n)
	for i, s := range steps {
		var err error
		if deps[i], specs[i], err = stepDoc(s); err != nil {
			return fmt.Errorf("insert workflow steps: %w", err)
		}
		names[i], queues[i], kinds[i], statuses[i] = s.Name, s.Queue, s.Kind, string(s.Status)
		payloads[i], results[i], errTexts[i] = rawOrNull(s.Job.Payload), rawText(s.Result), clean(s.Error)
		jobIDs[i], waiting[i], failed[i] = nullID(s.JobID), s.Waiting, s.Failed
		released[i], finished[i] = msPtr(s.ReleasedAt), msPtr(s.FinishedAt)
	}
	parents, children, conts := make([]string, len(edges)), make([]string, len(edges)), make([]bool, len(edges))
	for i, e := range edges {
		parents[i], children[i], conts[i] = e.Parent, e.Child, e.Continue
	}
	_, err := w.exec(`WITH steps AS (
			INSERT INTO workflow_steps (workflow_id, name, position, queue, kind, depends_on, status, job_id, waiting,
				failed, result, error, spec, payload, released_at, finished_at)
			SELECT $1, n, ord - 1, q, k, d::json, st, j, wt, fa, r::json, e, sp::json, pl::json, ra, fi
			FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::int[],
				$9::bool[], $10::text[], $11::text[], $12::text[], $13::text[], $14::timestamptz[], $15::timestamptz[])
				WITH ORDINALITY AS u(n, q, k, d, st, j, wt, fa, r, e, sp, pl, ra, fi, ord))
		INSERT INTO workflow_edges (workflow_id, parent, child, continue)
		SELECT $1, p, c, co FROM unnest($16::text[], $17::text[], $18::bool[]) AS u(p, c, co)`,
		wf, names, queues, kinds, deps, statuses, jobIDs, waiting, failed, results, errTexts, specs, payloads, released, finished,
		parents, children, conts)
	if err != nil {
		return fmt.Errorf("insert workflow steps: %w", err)
	}
	for _, s := range steps {
		s.WorkflowID = wf
	}
	return nil
}

// Workflow implements app.Tx: the row is locked to the commit.
func (w *wtx) Workflow(id int64) (*app.Workflow, error) {
	wf, err := scanWorkflow(w.queryRow(`SELECT `+workflowCols+` FROM workflows WHERE id = $1 FOR UPDATE`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("workflow %d: %w", id, app.ErrNotFound)
	}
	return wf, err
}

// SaveWorkflow implements app.Tx.
func (w *wtx) SaveWorkflow(wf *app.Workflow) error {
	tag, err := w.exec(`UPDATE workflows SET status = $1, done_count = $2, failed_count = $3, updated_at = $4, finished_at = $5
		WHERE id = $6`, string(wf.Status), wf.DoneCount, wf.FailedCount, ms(wf.UpdatedAt), msPtr(wf.FinishedAt), wf.ID)
	if err == nil && tag.RowsAffected() == 0 {
		err = fmt.Errorf("workflow %d: %w", wf.ID, app.ErrNotFound)
	}
	return err
}

// Steps implements app.Tx: the rows locked in name order, so two
// transactions locking steps of one workflow wait rather than deadlock.
func (w *wtx) Steps(wf int64, names []string) ([]*app.WorkflowStep, error) {
	rows, err := w.query(`SELECT `+stateCols+` FROM workflow_steps WHERE workflow_id = $1 AND name = ANY($2)
		ORDER BY name FOR UPDATE`, wf, names)
	return collect(rows, err, func(row pgx.Row) (*app.WorkflowStep, error) { return scanStep(row) })
}

// SaveSteps implements app.Tx: one UPDATE from arrays.
func (w *wtx) SaveSteps(steps []*app.WorkflowStep) error {
	if len(steps) == 0 {
		return nil
	}
	n := len(steps)
	wfs, names, statuses, jobs := make([]int64, n), make([]string, n), make([]string, n), make([]*int64, n)
	waiting, failed, results, errTexts := make([]int, n), make([]bool, n), make([]*string, n), make([]string, n)
	released, finished := make([]*time.Time, n), make([]*time.Time, n)
	for i, s := range steps {
		wfs[i], names[i], statuses[i], waiting[i], failed[i] = s.WorkflowID, s.Name, string(s.Status), s.Waiting, s.Failed
		jobs[i], results[i] = nullID(s.JobID), rawText(s.Result)
		errTexts[i], released[i], finished[i] = clean(s.Error), msPtr(s.ReleasedAt), msPtr(s.FinishedAt)
	}
	tag, err := w.exec(`UPDATE workflow_steps s SET status = u.status, job_id = u.job, waiting = u.waiting, failed = u.failed,
			result = u.result::json, error = u.error, released_at = u.released, finished_at = u.finished
		FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::int[], $6::bool[], $7::text[], $8::text[],
			$9::timestamptz[], $10::timestamptz[]) AS u(wf, name, status, job, waiting, failed, result, error, released, finished)
		WHERE s.workflow_id = u.wf AND s.name = u.name`,
		wfs, names, statuses, jobs, waiting, failed, results, errTexts, released, finished)
	if err == nil && tag.RowsAffected() != int64(n) {
		err = fmt.Errorf("save %d steps: %d stored: %w", n, tag.RowsAffected(), app.ErrNotFound)
	}
	return err
}

// Resolve implements app.Tx: one UPDATE counts, for every waiting child
// of parents, the edges from them that kinds resolves; the steps it leaves
// waiting on nothing come back in the order they were given.
func (w *wtx) Resolve(wf int64, parents []string, kinds app.EdgeKinds) ([]*app.WorkflowStep, error) {
	var cont []bool // the values of continue whose edges kinds resolves
	for _, c := range []bool{false, true} {
		if kinds.Resolves(c) {
			cont = append(cont, c)
		}
	}
	rows, err := w.query(`WITH c AS (
			SELECT child, count(*) AS n FROM workflow_edges
			WHERE workflow_id = $1 AND parent = ANY($2) AND continue = ANY($3::bool[])
			GROUP BY child),
		r AS (
			UPDATE workflow_steps s SET waiting = s.waiting - c.n
			FROM c
			WHERE s.workflow_id = $1 AND s.name = c.child AND s.status = 'waiting'
			RETURNING s.*)
		SELECT `+stepCols("")+` FROM r WHERE waiting = 0 ORDER BY position`, wf, parents, cont)
	return collect(rows, err, func(row pgx.Row) (*app.WorkflowStep, error) { return scanStep(row) })
}

// CancelWaiting implements app.Tx.
func (w *wtx) CancelWaiting(wf int64) (int, error) {
	tag, err := w.exec(`UPDATE workflow_steps SET status = 'cancelled', finished_at = $2 WHERE workflow_id = $1 AND status = 'waiting'`, wf, w.now)
	return int(tag.RowsAffected()), err
}

// ListWorkflows implements app.Store.
func (s *Store) ListWorkflows(ctx context.Context, f app.WorkflowFilter) ([]*app.Workflow, error) {
	wh := &where{}
	if f.Status != "" {
		wh.cond("status = " + wh.add(string(f.Status)))
	}
	if f.Name != "" {
		wh.cond("strpos(name, " + wh.add(f.Name) + ") > 0")
	}
	if f.AfterID > 0 {
		wh.cond("id < " + wh.add(f.AfterID))
	}
	out, err := readRows(ctx, s, scanWorkflow, `SELECT `+workflowCols+` FROM workflows`+wh.String()+sqlq.Page(false, f.Limit, 50, "id"), wh.args...)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	return out, nil
}

// GetWorkflow implements app.Store: the workflow, its steps and their jobs
// (in jobs, else in the dead-letter queue) from one snapshot.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (wf *app.Workflow, steps []*app.WorkflowStep, err error) {
	err = s.read(ctx, func(tx pgx.Tx) error {
		var rerr error
		if wf, rerr = scanWorkflow(tx.QueryRow(ctx, `SELECT `+workflowCols+` FROM workflows WHERE id = $1`, id)); rerr != nil {
			return rerr
		}
		rows, rerr := tx.Query(ctx, `SELECT `+stepCols("s")+`, j.status, coalesce(j.attempts, d.attempts, 0),
				coalesce(j.started_at, d.started_at)
			FROM workflow_steps s
			LEFT JOIN jobs j ON j.id = s.job_id
			LEFT JOIN dead_letter_jobs d ON d.id = s.job_id
			WHERE s.workflow_id = $1 ORDER BY s.position`, id)
		steps, rerr = collect(rows, rerr, func(row pgx.Row) (*app.WorkflowStep, error) {
			var status *string
			var attempts int
			var started *time.Time
			st, err := scanStep(row, &status, &attempts, &started)
			if err != nil {
				return nil, err
			}
			st.JobStatus, st.Attempts, st.StartedAt = app.Status(deref(status)), attempts, msPtr(started)
			return st, nil
		})
		return rerr
	})
	if err != nil {
		return nil, nil, fmt.Errorf("get workflow %d: %w", id, mapErr(err))
	}
	return wf, steps, nil
}

// Parents implements app.Store: one statement walks the steps' depends_on.
func (s *Store) Parents(ctx context.Context, wf int64, steps []string) (map[string][]*app.WorkflowStep, error) {
	out := map[string][]*app.WorkflowStep{}
	_, err := readRows(ctx, s, func(row pgx.Row) (struct{}, error) {
		var child string
		p, err := scanStep(row, &child)
		if err == nil {
			out[child] = append(out[child], p)
		}
		return struct{}{}, err
	}, `SELECT `+stepCols("p")+`, c.name
		FROM workflow_steps c
		CROSS JOIN LATERAL json_array_elements(c.depends_on) WITH ORDINALITY AS d(dep, ord)
		JOIN workflow_steps p ON p.workflow_id = c.workflow_id AND p.name = d.dep->>'step'
		WHERE c.workflow_id = $1 AND c.name = ANY($2)
		ORDER BY c.name, d.ord`, wf, steps)
	if err != nil {
		return nil, fmt.Errorf("parents of steps of workflow %d: %w", wf, err)
	}
	return out, nil
}

// OldWorkflows implements app.Tx: the rows are locked, so a retention
// pass on another node skips them.
func (w *wtx) OldWorkflows(before time.Time, limit int) ([]app.OldWorkflow, error) {
	rows, err := w.query(`SELECT id, step_count FROM workflows wf WHERE status IN ('done', 'cancelled') AND finished_at < $1
			AND NOT EXISTS (SELECT 1 FROM jobs WHERE workflow_id = wf.id AND status IN ('queued', 'processing'))
		ORDER BY finished_at, id LIMIT $2 FOR UPDATE SKIP LOCKED`, ms(before), limit)
	return collect(rows, err, func(row pgx.Row) (o app.OldWorkflow, err error) { return o, row.Scan(&o.ID, &o.Steps) })
}

// DeleteWorkflows implements app.Tx: one statement.
func (w *wtx) DeleteWorkflows(ids []int64) error {
	_, err := w.exec(`WITH steps AS (DELETE FROM workflow_steps WHERE workflow_id = ANY($1)),
			edges AS (DELETE FROM workflow_edges WHERE workflow_id = ANY($1)),
			jobs AS (DELETE FROM jobs WHERE workflow_id = ANY($1))
		DELETE FROM workflows WHERE id = ANY($1)`, ids)
	return err
}
