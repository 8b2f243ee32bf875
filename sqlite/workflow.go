package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/internal/sqlq"
)

// The workflow steps of app.Tx, each a statement or a few (many steps are
// stored 128 a statement, bound as VALUES rows), and the reads of
// app.WorkflowStore.

const workflowCols = `id, name, tags, status, step_count, done_count, failed_count, created_at, updated_at, finished_at`

func scanWorkflow(sc scanner) (*app.Workflow, error) {
	var (
		w                    app.Workflow
		tags, status         string
		createdAt, updatedAt int64
		finishedAt           sql.NullInt64
	)
	if err := sc.Scan(&w.ID, &w.Name, &tags, &status, &w.StepCount, &w.DoneCount, &w.FailedCount, &createdAt, &updatedAt, &finishedAt); err != nil {
		return nil, err
	}
	w.Status, w.CreatedAt, w.UpdatedAt, w.FinishedAt = app.WorkflowStatus(status), fromMS(createdAt), fromMS(updatedAt), fromNullMS(finishedAt)
	if err := app.DecodeList(tags, &w.Tags); err != nil {
		return nil, fmt.Errorf("workflow %d tags: %w", w.ID, err)
	}
	return &w, nil
}

// stepCols are a step's columns; its depends_on is in workflow_edges.
const stepCols = `workflow_id, name, queue, kind, status, job_id, waiting, failed, result, error, spec, payload, released_at, finished_at, position`

// stateCols is stepCols without the job a step becomes, which the rules
// deciding a step's end do not read: decoding it was a third of a read.
var stateCols = strings.Replace(stepCols, "spec, payload", "'{}', 'null'", 1)

// stepRow holds the columns of a step as scanned.
type stepRow struct {
	s                    app.WorkflowStep
	status, spec         string
	payload              string
	jobID, released, fin sql.NullInt64
	failed               int64
	result               sql.NullString
	jobStatus            sql.NullString
	attempts, startedAt  sql.NullInt64
}

func (r *stepRow) dest() []any {
	return []any{&r.s.WorkflowID, &r.s.Name, &r.s.Queue, &r.s.Kind, &r.status, &r.jobID, &r.s.Waiting,
		&r.failed, &r.result, &r.s.Error, &r.spec, &r.payload, &r.released, &r.fin, &r.s.Position}
}

func (r *stepRow) step() (*app.WorkflowStep, error) {
	s := &r.s
	s.Status, s.JobID, s.Failed, s.Result = app.StepStatus(r.status), r.jobID.Int64, r.failed != 0, nullJSON(r.result)
	s.ReleasedAt, s.FinishedAt = fromNullMS(r.released), fromNullMS(r.fin)
	s.JobStatus, s.Attempts, s.StartedAt = app.Status(r.jobStatus.String), int(r.attempts.Int64), fromNullMS(r.startedAt)
	job, err := app.ParseStepJob(r.spec, []byte(r.payload))
	if err != nil {
		return nil, fmt.Errorf("step %q of workflow %d: %w", s.Name, s.WorkflowID, err)
	}
	s.Job = job
	return s, nil
}

func scanStep(sc scanner) (*app.WorkflowStep, error) {
	var r stepRow
	if err := sc.Scan(r.dest()...); err != nil {
		return nil, err
	}
	return r.step()
}

// InsertWorkflow implements app.Tx.
func (w *wtx) InsertWorkflow(wf *app.Workflow) error {
	res, err := w.exec(`INSERT INTO workflows (name, tags, status, step_count, done_count, failed_count, created_at, updated_at, finished_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, wf.Name, app.EncodeList(wf.Tags), string(wf.Status), wf.StepCount,
		wf.DoneCount, wf.FailedCount, ms(wf.CreatedAt), ms(wf.UpdatedAt), nullMS(wf.FinishedAt))
	if err != nil {
		return err
	}
	wf.ID, err = res.LastInsertId()
	return err
}

// InsertSteps implements app.Tx: multi-row INSERTs.
func (w *wtx) InsertSteps(wf int64, steps []*app.WorkflowStep, edges []app.WorkflowEdge) error {
	const stepChunk = 500 // 12 variables a row, well under SQLite's limit
	for start := 0; start < len(steps); start += stepChunk {
		chunk := steps[start:min(len(steps), start+stepChunk)]
		args := make([]any, 0, 12*len(chunk))
		for _, s := range chunk {
			s.WorkflowID = wf
			spec, err := s.Job.Spec()
			if err != nil {
				return err
			}
			args = append(args, wf, s.Name, s.Position, s.Queue, s.Kind, string(s.Status),
				nullID(s.JobID), s.Waiting, s.Failed, spec, rawOrNull(s.Job.Payload), nullMS(s.ReleasedAt))
		}
		if _, err := w.exec(`INSERT INTO workflow_steps (workflow_id, name, position, queue, kind, status,
			job_id, waiting, failed, spec, payload, released_at) VALUES `+rows(len(chunk), 12), args...); err != nil {
			return err
		}
	}
	const edgeChunk = 1000
	ord := map[string]int{} // edges come in each child's depends_on order
	for start := 0; start < len(edges); start += edgeChunk {
		chunk := edges[start:min(len(edges), start+edgeChunk)]
		args := make([]any, 0, 5*len(chunk))
		for _, e := range chunk {
			args = append(args, wf, e.Parent, e.Child, e.Continue, ord[e.Child])
			ord[e.Child]++
		}
		if _, err := w.exec(`INSERT INTO workflow_edges (workflow_id, parent, child, continue, ord) VALUES `+rows(len(chunk), 5), args...); err != nil {
			return err
		}
	}
	return nil
}

// rows is n VALUES rows of cols placeholders each.
func rows(n, cols int) string {
	row := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	return strings.TrimSuffix(strings.Repeat(row+",", n), ",")
}

// Workflow implements app.Tx.
func (w *wtx) Workflow(id int64) (*app.Workflow, error) {
	wf, err := scanWorkflow(w.queryRow(`SELECT `+workflowCols+` FROM workflows WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("workflow %d: %w", id, app.ErrNotFound)
	}
	return wf, err
}

// SaveWorkflow implements app.Tx.
func (w *wtx) SaveWorkflow(wf *app.Workflow) error {
	res, err := w.exec(`UPDATE workflows SET status = ?, done_count = ?, failed_count = ?, updated_at = ?, finished_at = ? WHERE id = ?`,
		string(wf.Status), wf.DoneCount, wf.FailedCount, ms(wf.UpdatedAt), nullMS(wf.FinishedAt), wf.ID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(err, fmt.Errorf("workflow %d: %w", wf.ID, app.ErrNotFound))
	}
	return nil
}

// Steps implements app.Tx.
func (w *wtx) Steps(wf int64, names []string) ([]*app.WorkflowStep, error) {
	list, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	rows, err := w.query(`SELECT `+stateCols+` FROM workflow_steps
		WHERE workflow_id = ? AND name IN (SELECT value FROM json_each(?))`, wf, string(list))
	return collect(rows, err, scanStep)
}

// saveStepCols is the number of values saveStepsSQL binds per step.
const saveStepCols = 10

// saveStepsSQL[n] stores n steps bound as VALUES rows, n a power of two
// up to saveStepsChunk (so that few statements are ever prepared); rows
// of NULLs pad it and match no step.
var saveStepsSQL = func() map[int]string {
	qs := map[int]string{}
	for n := 1; n <= saveStepsChunk; n *= 2 {
		qs[n] = `UPDATE workflow_steps SET status = v.column3, job_id = v.column4, waiting = v.column5, failed = v.column6,
			result = v.column7, error = v.column8, released_at = v.column9, finished_at = v.column10
		FROM (VALUES ` + rows(n, saveStepCols) + `) AS v
		WHERE workflow_steps.workflow_id = v.column1 AND workflow_steps.name = v.column2`
	}
	return qs
}()

const saveStepsChunk = 128

// SaveSteps implements app.Tx: a statement per 128 steps.
func (w *wtx) SaveSteps(steps []*app.WorkflowStep) error {
	for len(steps) > 0 {
		chunk := steps[:min(len(steps), saveStepsChunk)]
		steps = steps[len(chunk):]
		n := completeSize(len(chunk))
		args := make([]any, 0, saveStepCols*n)
		for _, s := range chunk {
			args = append(args, s.WorkflowID, s.Name, string(s.Status), nullID(s.JobID), s.Waiting, s.Failed,
				nullRaw(s.Result), s.Error, nullMS(s.ReleasedAt), nullMS(s.FinishedAt))
		}
		for range n - len(chunk) {
			args = append(args, make([]any, saveStepCols)...)
		}
		res, err := w.exec(saveStepsSQL[n], args...)
		if err != nil {
			return err
		}
		if got, err := res.RowsAffected(); err != nil || got != int64(len(chunk)) {
			return fmt.Errorf("save %d steps: %d stored (%v): %w", len(chunk), got, err, app.ErrNotFound)
		}
	}
	return nil
}

// edgeCond is the condition on workflow_edges of the edges kinds resolves.
func edgeCond(kinds app.EdgeKinds) string {
	switch kinds {
	case app.EdgesBlocking:
		return ` AND continue = 0`
	case app.EdgesContinue:
		return ` AND continue = 1`
	}
	return ``
}

// Resolve implements app.Tx: one UPDATE over the waiting children of
// parents, each counting the edges from them.
func (w *wtx) Resolve(wf int64, parents []string, kinds app.EdgeKinds) ([]*app.WorkflowStep, error) {
	list, err := json.Marshal(parents)
	if err != nil {
		return nil, err
	}
	// Both lookups of edges go by the primary key (workflow, parent,
	// child): left to itself, SQLite reads every edge and every step of
	// the workflow for each resolve (NOT INDEXED keeps it off the child
	// index, the IN keeps it off a scan of the steps).
	cond := edgeCond(kinds)
	rows, err := w.query(`UPDATE workflow_steps SET waiting = waiting - (
			SELECT count(*) FROM workflow_edges AS e NOT INDEXED
			WHERE e.workflow_id = ?1 AND e.parent IN (SELECT value FROM json_each(?2)) AND e.child = workflow_steps.name`+cond+`)
		WHERE workflow_id = ?1 AND status = 'waiting' AND name IN (
			SELECT child FROM workflow_edges NOT INDEXED
			WHERE workflow_id = ?1 AND parent IN (SELECT value FROM json_each(?2))`+cond+`)
		RETURNING `+stepCols, wf, string(list))
	steps, err := collect(rows, err, scanStep)
	if err != nil {
		return nil, err
	}
	ready := steps[:0]
	for _, s := range steps {
		if s.Waiting == 0 {
			ready = append(ready, s)
		}
	}
	return ready, nil
}

// CancelWaiting implements app.Tx.
func (w *wtx) CancelWaiting(wf int64) (int, error) {
	res, err := w.exec(`UPDATE workflow_steps SET status = 'cancelled', finished_at = ? WHERE workflow_id = ? AND status = 'waiting'`, ms(w.now), wf)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// OldWorkflows implements app.Tx.
func (w *wtx) OldWorkflows(before time.Time, limit int) ([]app.OldWorkflow, error) {
	rows, err := w.query(`SELECT id, step_count FROM workflows wf WHERE status IN ('done', 'cancelled') AND finished_at < ?
		AND NOT EXISTS (SELECT 1 FROM jobs WHERE workflow_id = wf.id AND status IN ('queued', 'processing'))
		ORDER BY finished_at, id LIMIT ?`, ms(before), limit)
	return collect(rows, err, func(sc scanner) (o app.OldWorkflow, err error) { return o, sc.Scan(&o.ID, &o.Steps) })
}

// DeleteWorkflows implements app.Tx.
func (w *wtx) DeleteWorkflows(ids []int64) error {
	in := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := anys(ids)
	rows, err := w.query(`DELETE FROM jobs WHERE workflow_id IN (`+in+`) RETURNING queue, status`, args...)
	gone, err := collect(rows, err, func(sc scanner) (k statusKey, err error) { return k, sc.Scan(&k.queue, &k.status) })
	if err != nil {
		return err
	}
	for _, k := range gone {
		w.Moved(k.queue, k.status, "", 1)
	}
	for _, table := range []string{"workflow_edges", "workflow_steps"} {
		if _, err := w.exec(`DELETE FROM `+table+` WHERE workflow_id IN (`+in+`)`, args...); err != nil {
			return err
		}
	}
	_, err = w.exec(`DELETE FROM workflows WHERE id IN (`+in+`)`, args...)
	return err
}

// ListWorkflows implements app.Store.
func (s *Store) ListWorkflows(ctx context.Context, f app.WorkflowFilter) ([]*app.Workflow, error) {
	wh := &where{}
	if f.Status != "" {
		wh.add("status = ?", string(f.Status))
	}
	if f.Name != "" {
		wh.add("instr(name, ?) > 0", f.Name)
	}
	if f.AfterID > 0 {
		wh.add("id < ?", f.AfterID)
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+workflowCols+` FROM workflows`+wh.String()+sqlq.Page(false, f.Limit, 50, "id"), wh.args...)
	out, err := collect(rows, err, scanWorkflow)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", mapErr(err))
	}
	return out, nil
}

// GetWorkflow implements app.Store: the workflow and its steps, with
// their jobs, in one read transaction.
func (s *Store) GetWorkflow(ctx context.Context, id int64) (*app.Workflow, []*app.WorkflowStep, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, nil, mapErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	wf, err := scanWorkflow(tx.QueryRowContext(ctx, `SELECT `+workflowCols+` FROM workflows WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, app.ErrNotFound
	}
	if err != nil {
		return nil, nil, mapErr(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT s.`+strings.ReplaceAll(stepCols, ", ", ", s.")+`,
			j.status, coalesce(j.attempts, d.attempts), coalesce(j.started_at, d.started_at)
		FROM workflow_steps s
			LEFT JOIN jobs j ON j.id = s.job_id
			LEFT JOIN dead_letter_jobs d ON d.id = s.job_id
		WHERE s.workflow_id = ? ORDER BY s.position`, id)
	steps, err := collect(rows, err, func(sc scanner) (*app.WorkflowStep, error) {
		var r stepRow
		if err := sc.Scan(append(r.dest(), &r.jobStatus, &r.attempts, &r.startedAt)...); err != nil {
			return nil, err
		}
		return r.step()
	})
	if err != nil {
		return nil, nil, mapErr(err)
	}
	rows, err = tx.QueryContext(ctx, `SELECT child, parent, continue FROM workflow_edges WHERE workflow_id = ? ORDER BY child, ord`, id)
	type dep struct {
		child string
		d     app.Dependency
	}
	deps, err := collect(rows, err, func(sc scanner) (d dep, err error) {
		var cont bool
		err = sc.Scan(&d.child, &d.d.Step, &cont)
		if cont {
			d.d.OnFailure = app.OnFailureContinue
		}
		return d, err
	})
	if err != nil {
		return nil, nil, mapErr(err)
	}
	byChild := make(map[string][]app.Dependency, len(steps))
	for _, d := range deps {
		byChild[d.child] = append(byChild[d.child], d.d)
	}
	for _, st := range steps {
		if st.DependsOn = byChild[st.Name]; st.DependsOn == nil {
			st.DependsOn = []app.Dependency{}
		}
	}
	return wf, steps, nil
}

// Parents implements app.Store: one statement over the edges of the
// steps, in their depends_on order.
func (s *Store) Parents(ctx context.Context, wf int64, steps []string) (map[string][]*app.WorkflowStep, error) {
	names, err := json.Marshal(steps)
	if err != nil {
		return nil, err
	}
	cols := strings.Replace("p."+strings.ReplaceAll(stepCols, ", ", ", p."), "p.spec, p.payload", "'{}', 'null'", 1)
	rows, err := s.rdb.QueryContext(ctx, `SELECT e.child, `+cols+`
		FROM workflow_edges e JOIN workflow_steps p ON p.workflow_id = e.workflow_id AND p.name = e.parent
		WHERE e.workflow_id = ? AND e.child IN (SELECT value FROM json_each(?))
		ORDER BY e.child, e.ord`, wf, string(names))
	type parent struct {
		child string
		step  *app.WorkflowStep
	}
	ps, err := collect(rows, err, func(sc scanner) (p parent, err error) {
		var r stepRow
		if err := sc.Scan(append([]any{&p.child}, r.dest()...)...); err != nil {
			return p, err
		}
		p.step, err = r.step()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("parents of steps of workflow %d: %w", wf, mapErr(err))
	}
	out := map[string][]*app.WorkflowStep{}
	for _, p := range ps {
		out[p.child] = append(out[p.child], p.step)
	}
	return out, nil
}
