package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// Importer copies rows into an empty store, keeping their ids, in one
// transaction: a failed copy leaves the database as empty as it found it,
// so it can simply run again. It holds EXCLUSIVE locks on the tables it
// fills, so a server started on the database meanwhile waits for it.
type Importer struct {
	s     *Store
	tx    pgx.Tx
	rows  map[string]int64
	maxID map[string]int64 // the highest id copied into each identity table
	done  bool             // committed or rolled back
}

// BeginImport starts a copy into the store, which must hold no jobs,
// dead-letter rows, workflows, periodic fires, once records or audit entries. The
// caller adds rows with Add and ends with Commit or Rollback.
func (s *Store) BeginImport(ctx context.Context) (*Importer, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		s.leave()
		return nil, fmt.Errorf("import: %w", mapErr(err))
	}
	im := &Importer{s: s, tx: tx, rows: map[string]int64{}, maxID: map[string]int64{}}
	if _, err := tx.Exec(ctx, `LOCK TABLE jobs, dead_letter_jobs, workflows, workflow_steps, workflow_edges, queues, periodic_fires, once_records, audit, events IN EXCLUSIVE MODE`); err != nil {
		im.Rollback(ctx)
		return nil, fmt.Errorf("import: lock the tables: %w", mapErr(err))
	}
	var full bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs) OR EXISTS (SELECT 1 FROM dead_letter_jobs) OR EXISTS (SELECT 1 FROM workflows)
			OR EXISTS (SELECT 1 FROM periodic_fires) OR EXISTS (SELECT 1 FROM once_records) OR EXISTS (SELECT 1 FROM audit)`).Scan(&full); err != nil {
		im.Rollback(ctx)
		return nil, fmt.Errorf("import: %w", mapErr(err))
	}
	if full {
		im.Rollback(ctx)
		return nil, fmt.Errorf("import: schema %s already holds jobs or records; copy into an empty database (or schema)", s.schema)
	}
	// Jobs land in a staging table first, then go into jobs as the status
	// guard allows (inserted queued, then moved along legal transitions):
	// the copy never needs to bypass the guard.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_jobs (LIKE jobs) ON COMMIT DROP`); err != nil {
		im.Rollback(ctx)
		return nil, fmt.Errorf("import: %w", mapErr(err))
	}
	// workflow_edges has no order (a step's depends_on does): the edges'
	// ord waits here until Commit, when every edge of a step has come,
	// whatever batches they came in.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE import_edges (workflow_id bigint, child text, parent text, continue boolean, ord integer)
		ON COMMIT DROP`); err != nil {
		im.Rollback(ctx)
		return nil, fmt.Errorf("import: %w", mapErr(err))
	}
	return im, nil
}

// Add copies b into the store (inside the import's transaction).
func (im *Importer) Add(ctx context.Context, b app.Rows) error {
	if err := im.jobs(ctx, b.Jobs); err != nil {
		return fmt.Errorf("import jobs: %w", mapErr(err))
	}
	specs := make([]string, len(b.Steps))
	for i, r := range b.Steps {
		var err error
		if _, specs[i], err = stepDoc(r.Step); err != nil {
			return fmt.Errorf("import workflow_steps: workflow %d: %w", r.Step.WorkflowID, err)
		}
	}
	steps := []struct {
		table string
		cols  []string
		n     int
		row   func(i int) []any
		id    func(i int) int64
	}{
		{"dead_letter_jobs", deadColumns, len(b.Dead), func(i int) []any { return deadRow(b.Dead[i]) }, nil},
		{"workflows", []string{"id", "name", "tags", "status", "step_count", "done_count", "failed_count", "created_at", "updated_at", "finished_at"},
			len(b.Workflows), func(i int) []any {
				w := b.Workflows[i]
				return []any{w.ID, clean(w.Name), tags(w.Tags), string(w.Status), w.StepCount, w.DoneCount, w.FailedCount,
					ms(w.CreatedAt), ms(w.UpdatedAt), msPtr(w.FinishedAt)}
			}, func(i int) int64 { return b.Workflows[i].ID }},
		// depends_on is left to Commit, which has every edge by then.
		{"workflow_steps", []string{"workflow_id", "name", "position", "queue", "kind", "status", "job_id", "waiting", "failed",
			"result", "error", "spec", "payload", "released_at", "finished_at"}, len(b.Steps),
			func(i int) []any {
				s, pos := b.Steps[i].Step, b.Steps[i].Position
				return []any{s.WorkflowID, s.Name, pos, s.Queue, s.Kind, string(s.Status), nullID(s.JobID), s.Waiting, s.Failed,
					rawText(s.Result), clean(s.Error), specs[i], rawOrNull(s.Job.Payload), msPtr(s.ReleasedAt), msPtr(s.FinishedAt)}
			}, nil},
		{"workflow_edges", []string{"workflow_id", "parent", "child", "continue"}, len(b.Edges),
			func(i int) []any {
				e := b.Edges[i]
				return []any{e.WorkflowID, e.Parent, e.Child, e.Continue}
			}, nil},
		{"periodic_fires", []string{"entry", "fire_at", "job_id", "created_at"}, len(b.Fires),
			func(i int) []any {
				f := b.Fires[i]
				return []any{f.Entry, ms(f.FireAt), f.JobID, ms(f.CreatedAt)}
			}, nil},
		{"once_records", []string{"key", "token", "done", "result", "held_until", "created_at", "done_at"}, len(b.Once),
			func(i int) []any {
				o := b.Once[i]
				return []any{o.Key, nullString(o.Token), o.Done, rawText(o.Result), msPtr(o.HeldUntil), ms(o.CreatedAt), msPtr(o.DoneAt)}
			}, nil},
		{"audit", []string{"id", "at", "actor", "action", "target", "filter", "count"}, len(b.Audit),
			func(i int) []any {
				e := b.Audit[i]
				return []any{e.ID, ms(e.At), clean(e.Actor), clean(e.Action), nullString(clean(e.Target)), rawText(e.Filter), e.Count}
			}, func(i int) int64 { return b.Audit[i].ID }},
		{"events", []string{"id", "job_id", "queue", "kind", "type", "at", "data"}, len(b.Events),
			func(i int) []any {
				e := b.Events[i]
				var jobID *int64
				if e.JobID != 0 {
					jobID = &e.JobID
				}
				return []any{e.ID, jobID, e.Queue, e.Kind, e.Type, ms(e.At), rawText(e.Data)}
			}, func(i int) int64 { return b.Events[i].ID }},
		{"runtime_settings", []string{"kind", "name", "value", "updated_at", "updated_by"}, len(b.Settings),
			func(i int) []any {
				r := b.Settings[i]
				return []any{r.Kind, r.Name, rawText(r.Value), ms(r.UpdatedAt), clean(r.UpdatedBy)}
			}, nil},
	}
	for _, st := range steps {
		if st.n == 0 {
			continue
		}
		n, err := im.tx.CopyFrom(ctx, pgx.Identifier{st.table}, st.cols, pgx.CopyFromSlice(st.n, func(i int) ([]any, error) {
			if st.id != nil {
				im.maxID[st.table] = max(im.maxID[st.table], st.id(i))
			}
			return st.row(i), nil
		}))
		if err != nil {
			return fmt.Errorf("import %s: %w", st.table, mapErr(err))
		}
		im.rows[st.table] += n
	}
	if len(b.Edges) > 0 {
		_, err := im.tx.CopyFrom(ctx, pgx.Identifier{"import_edges"}, []string{"workflow_id", "child", "parent", "continue", "ord"},
			pgx.CopyFromSlice(len(b.Edges), func(i int) ([]any, error) {
				e := b.Edges[i]
				return []any{e.WorkflowID, e.Child, e.Parent, e.Continue, e.Ord}, nil
			}))
		if err != nil {
			return fmt.Errorf("import workflow_edges: %w", mapErr(err))
		}
	}
	for _, q := range b.Queues {
		if _, err := im.tx.Exec(ctx, `INSERT INTO queues (name, paused, paused_at) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at`,
			q.Name, q.Paused, msPtr(q.PausedAt)); err != nil {
			return fmt.Errorf("import queues: %w", mapErr(err))
		}
		im.rows["queues"]++
	}
	return nil
}

// importJobCols are the columns of jobs an import fills (all of them).
var importJobCols = []string{"id", "queue", "kind", "payload", "status", "priority", "run_at", "attempts", "max_attempts",
	"timeout_ms", "expires_at", "tags", "idempotency_key", "lease", "lease_expires_at", "worker_id",
	"cancel_requested", "cancel_reason", "errors", "result", "replayed_from", "created_at", "updated_at",
	"started_at", "finished_at", "workflow_id", "step", "flow_key", "held", "dedupe",
	"progress", "progress_message", "progress_at", "progress_attempt",
	"callback_url", "traceparent", "tracestate"}

// jobs copies jobs through the staging table: inserted queued, then moved
// on along legal transitions to their status (processing; processing then
// done; cancelled), so the status guard checks the copy like any write.
func (im *Importer) jobs(ctx context.Context, jobs []*app.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	if _, err := im.tx.Exec(ctx, `TRUNCATE import_jobs`); err != nil {
		return err
	}
	for _, j := range jobs {
		if !j.Status.Valid() {
			return fmt.Errorf("job %d: status %q: %w", j.ID, j.Status, app.ErrInvalidStatus)
		}
		im.maxID["jobs"] = max(im.maxID["jobs"], j.ID)
	}
	_, err := im.tx.CopyFrom(ctx, pgx.Identifier{"import_jobs"}, importJobCols, pgx.CopyFromSlice(len(jobs), func(i int) ([]any, error) {
		j := jobs[i]
		return []any{j.ID, j.Queue, j.Kind, rawOrNull(j.Payload), string(j.Status), j.Priority, ms(j.RunAt), j.Attempts, j.MaxAttempts,
			j.Timeout.D().Milliseconds(), msPtr(j.ExpiresAt), tags(j.Tags), nullString(j.IdempotencyKey), j.Lease,
			msPtr(j.LeaseExpiresAt), nullString(clean(j.WorkerID)), j.CancelRequested, nullString(clean(j.CancelReason)),
			app.EncodeList(j.Errors), rawText(j.Result), j.ReplayedFrom, ms(j.CreatedAt), ms(j.UpdatedAt), msPtr(j.StartedAt), msPtr(j.FinishedAt),
			nullID(j.WorkflowID), nullString(j.Step), nullString(j.Key), j.Held, nullString(j.Dedupe),
			j.ProgressPercent, nullString(clean(j.ProgressMessage)), msPtr(j.ProgressAt), progressAttempt(j),
			nullString(clean(j.CallbackURL)), nullString(clean(j.Traceparent)), nullString(clean(j.Tracestate))}, nil
	}))
	if err != nil {
		return err
	}
	cols := ""
	sel := ""
	for i, c := range importJobCols {
		if i > 0 {
			cols += ", "
			sel += ", "
		}
		cols += c
		if c == "status" {
			sel += "'queued'"
		} else {
			sel += c
		}
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO jobs (` + cols + `) SELECT ` + sel + ` FROM import_jobs`)
	b.Queue(`UPDATE jobs j SET status = 'processing' FROM import_jobs i WHERE j.id = i.id AND i.status IN ('processing', 'done')`)
	b.Queue(`UPDATE jobs j SET status = i.status FROM import_jobs i WHERE j.id = i.id AND i.status IN ('done', 'cancelled')`)
	br := im.tx.SendBatch(ctx, &b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	im.rows["jobs"] += tag.RowsAffected()
	return nil
}

// Reserve keeps the ids of table ("jobs", "workflows", "audit" or
// "events") up to top from being handed out after the copy: the source
// handed them out to rows deleted since, which other rows (a dead-letter
// row, an audit entry) may still name. Commit applies it.
func (im *Importer) Reserve(table string, top int64) { im.maxID[table] = max(im.maxID[table], top) }

// Rows counts the rows copied so far, per table.
func (im *Importer) Rows() map[string]int64 { return maps.Clone(im.rows) }

// Commit writes each copied step's depends_on from the copied edges, moves
// the id sequences past the highest ids copied or reserved (and past
// maxJobID, the highest job id the source ever handed out, so no id is
// ever used twice; workflows also past every workflow_id a job or
// dead-letter row names), commits the copy, and refreshes the planner's
// statistics of the filled tables.
func (im *Importer) Commit(ctx context.Context, maxJobID int64) error {
	if im.done {
		return errors.New("import: already finished")
	}
	defer im.finish()
	if err := im.dependsOn(ctx); err != nil {
		im.tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := im.setval(ctx, "jobs", max(maxJobID, im.maxID["jobs"]), `SELECT max(id) FROM dead_letter_jobs`); err != nil {
		im.tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	if err := im.setval(ctx, "workflows", im.maxID["workflows"], `SELECT max(v) FROM (
			SELECT max(workflow_id) AS v FROM jobs UNION ALL SELECT max(workflow_id) FROM dead_letter_jobs) m`); err != nil {
		im.tx.Rollback(context.WithoutCancel(ctx))
		return err
	}
	for _, t := range []string{"events", "audit"} {
		if err := im.setval(ctx, t, im.maxID[t], ""); err != nil {
			im.tx.Rollback(context.WithoutCancel(ctx))
			return err
		}
	}
	if err := im.tx.Commit(ctx); err != nil {
		return fmt.Errorf("import: commit: %w", mapErr(err))
	}
	if _, err := im.s.pool.Exec(ctx, `ANALYZE jobs, dead_letter_jobs, workflows, workflow_steps, workflow_edges, events`); err != nil {
		im.s.log.Warn().Err(err).Msg("import: analyze")
	}
	return nil
}

// dependsOn writes the depends_on of every step that has copied edges, in
// the edges' ord, as the text InsertWorkflow stores: json.Marshal of the
// []app.Dependency. to_json escapes a step name as encoding/json does, as
// names are only of the characters app.ValidateKind allows. An edge whose
// step was not copied fails the import: its dependency would be lost.
func (im *Importer) dependsOn(ctx context.Context) error {
	if im.rows["workflow_edges"] == 0 {
		return nil
	}
	var children, set int64
	err := im.tx.QueryRow(ctx, `WITH d AS (
			SELECT workflow_id, child, '[' || string_agg('{"step":' || to_json(parent)::text
				|| CASE WHEN continue THEN ',"on_failure":' || to_json($1::text)::text ELSE '' END || '}', ',' ORDER BY ord) || ']' AS deps
			FROM import_edges GROUP BY workflow_id, child),
		u AS (
			UPDATE workflow_steps s SET depends_on = d.deps::json FROM d
			WHERE s.workflow_id = d.workflow_id AND s.name = d.child
			RETURNING 1)
		SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM u)`, app.OnFailureContinue).Scan(&children, &set)
	if err != nil {
		return fmt.Errorf("import: depends_on of the steps: %w", mapErr(err))
	}
	if set != children {
		return fmt.Errorf("import: edges name %d steps, %d of them copied", children, set)
	}
	return nil
}

// setval makes the identity sequence of table hand out ids above top (and
// above the highest id that also query finds).
func (im *Importer) setval(ctx context.Context, table string, top int64, also string) error {
	if also != "" {
		var v *int64
		if err := im.tx.QueryRow(ctx, also).Scan(&v); err != nil {
			return fmt.Errorf("import: %s sequence: %w", table, mapErr(err))
		}
		if v != nil {
			top = max(top, *v)
		}
	}
	if top <= 0 {
		return nil
	}
	if _, err := im.tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), $2)`, table, top); err != nil {
		return fmt.Errorf("import: %s sequence: %w", table, mapErr(err))
	}
	return nil
}

// Rollback abandons the copy: the database is as before BeginImport.
func (im *Importer) Rollback(ctx context.Context) {
	if im.done {
		return
	}
	im.tx.Rollback(context.WithoutCancel(ctx))
	im.finish()
}

func (im *Importer) finish() {
	if !im.done {
		im.done = true
		im.s.leave()
	}
}
