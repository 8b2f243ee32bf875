package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/queuehq/queue/app"
)

// ExportSummary is what Export read.
type ExportSummary struct {
	// Rows counts the rows of each table.
	Rows map[string]int64
	// MaxJobID is the highest job id the database ever handed out (also of
	// jobs deleted since): the next store must start above it, so no id is
	// ever used twice.
	MaxJobID int64
	// MaxWorkflowID is the same for workflows: dead-letter rows and audit
	// entries may name a workflow that retention has deleted since.
	MaxWorkflowID int64
}

// ExportTables lists the tables Export copies, in the order it reads them.
var ExportTables = []string{"jobs", "dead_letter_jobs", "workflows", "workflow_steps", "workflow_edges", "queues", "periodic_fires", "once_records", "audit", "events"}

// Export reads every job (with status, attempts, lease and errors), every
// dead-letter row, the workflows (their steps in order, then their
// edges), the queue state, periodic fire records, once records, audit
// entries and lifecycle events, table by table in id (or key) order, and
// hands them to fn in batches of up to size rows (if size is not
// positive, 1000). It reads one snapshot, so the copy is consistent. It
// takes the server lock beside the file first and fails with *LockedError
// while a server runs on the database: stop it, so nothing changes after
// the copy. Throughput counters (kept two hours), the charts' rows and rate
// buckets are not exported. An error from fn stops the export and is returned.
func (s *Store) Export(ctx context.Context, size int, fn func(app.Rows) error) (ExportSummary, error) {
	sum := ExportSummary{Rows: map[string]int64{}}
	if size <= 0 {
		size = 1000
	}
	if s.lock == nil {
		if err := s.takeLock(); err != nil {
			var le *LockedError
			if errors.As(err, &le) || !readOnlyFS(err) {
				return sum, err
			}
			// A read-only file system: no server can be writing to it.
		} else if s.wconn == nil { // a read-only store holds the lock only for the export
			defer s.releaseLock()
		}
	}
	tx, err := s.rdb.BeginTx(ctx, nil)
	if err != nil {
		return sum, fmt.Errorf("export %s: %w", s.path, mapErr(err))
	}
	defer tx.Rollback()
	var seq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(v) FROM (
			SELECT seq AS v FROM sqlite_sequence WHERE name = 'jobs'
			UNION ALL SELECT max(id) FROM jobs UNION ALL SELECT max(id) FROM dead_letter_jobs)`).Scan(&seq); err != nil {
		return sum, fmt.Errorf("export %s: highest job id: %w", s.path, mapErr(err))
	}
	sum.MaxJobID = seq.Int64
	if err := tx.QueryRowContext(ctx, `SELECT max(v) FROM (
			SELECT seq AS v FROM sqlite_sequence WHERE name = 'workflows' UNION ALL SELECT max(id) FROM workflows
			UNION ALL SELECT max(workflow_id) FROM jobs UNION ALL SELECT max(workflow_id) FROM dead_letter_jobs)`).Scan(&seq); err != nil {
		return sum, fmt.Errorf("export %s: highest workflow id: %w", s.path, mapErr(err))
	}
	sum.MaxWorkflowID = seq.Int64
	for _, t := range exports {
		var total int64
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+t.table).Scan(&total); err != nil {
			return sum, fmt.Errorf("export %s: count %s: %w", s.path, t.table, mapErr(err))
		}
		rows, err := tx.QueryContext(ctx, t.query)
		if err != nil {
			return sum, fmt.Errorf("export %s: read %s: %w", s.path, t.table, mapErr(err))
		}
		sum.Rows[t.table] = 0
		b := app.Rows{Table: t.table, Total: total}
		n := 0
		flush := func() error {
			if n == 0 {
				return nil
			}
			b.Done += int64(n)
			sum.Rows[t.table] += int64(n)
			if err := fn(b); err != nil {
				return err
			}
			b = app.Rows{Table: t.table, Total: total, Done: b.Done}
			n = 0
			return nil
		}
		for rows.Next() {
			if err := t.scan(rows, &b); err != nil {
				rows.Close()
				return sum, fmt.Errorf("export %s: read %s: %w", s.path, t.table, err)
			}
			if n++; n >= size {
				if err := flush(); err != nil {
					rows.Close()
					return sum, err
				}
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return sum, fmt.Errorf("export %s: read %s: %w", s.path, t.table, mapErr(err))
		}
		if err := flush(); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// readOnlyFS reports whether err says the lock file could not be made
// because the file system (or directory) is not writable.
func readOnlyFS(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, os.ErrPermission)
}

// exports is how each table is read, in ExportTables order.
var exports = []struct {
	table string
	query string
	scan  func(*sql.Rows, *app.Rows) error
}{
	{"jobs", `SELECT ` + jobCols + ` FROM jobs ORDER BY id`, into(scanJob, func(b *app.Rows) *[]*app.Job { return &b.Jobs })},
	{"dead_letter_jobs", `SELECT ` + deadCols + ` FROM dead_letter_jobs ORDER BY id`, into(scanDead, func(b *app.Rows) *[]*app.DeadJob { return &b.Dead })},
	// Steps in their workflow's order and edges after them: an import can
	// rebuild each step's depends_on from the edges' ord once it has them all.
	{"workflows", `SELECT ` + workflowCols + ` FROM workflows ORDER BY id`, into(scanWorkflow, func(b *app.Rows) *[]*app.Workflow { return &b.Workflows })},
	{"workflow_steps", `SELECT position, ` + stepCols + ` FROM workflow_steps ORDER BY workflow_id, position`,
		into(scanStepRecord, func(b *app.Rows) *[]app.StepRecord { return &b.Steps })},
	{"workflow_edges", `SELECT workflow_id, parent, child, continue, ord FROM workflow_edges ORDER BY workflow_id, parent, child`,
		into(scanEdgeRecord, func(b *app.Rows) *[]app.EdgeRecord { return &b.Edges })},
	{"queues", `SELECT name, paused, paused_at FROM queues ORDER BY name`, into(scanQueue, func(b *app.Rows) *[]app.QueueState { return &b.Queues })},
	{"periodic_fires", `SELECT entry, fire_at, job_id, created_at FROM periodic_fires ORDER BY entry, fire_at`, into(scanFire, func(b *app.Rows) *[]app.FireRecord { return &b.Fires })},
	{"once_records", `SELECT ` + onceCols + ` FROM once_records ORDER BY key`, into(scanOnce, func(b *app.Rows) *[]*app.OnceRecord { return &b.Once })},
	{"audit", `SELECT id, at, actor, action, target, filter, count FROM audit ORDER BY id`, into(scanAudit, func(b *app.Rows) *[]app.AuditEntry { return &b.Audit })},
	{"events", `SELECT id, job_id, queue, kind, type, at, data FROM events ORDER BY id`, into(scanEvent, func(b *app.Rows) *[]app.Event { return &b.Events })},
	{"runtime_settings", `SELECT kind, name, value, updated_at, updated_by FROM runtime_settings ORDER BY kind, name`,
		into(func(sc scanner) (app.SettingsRecord, error) {
			r, err := scanSetting(sc)
			if err != nil {
				return app.SettingsRecord{}, err
			}
			return *r, nil
		}, func(b *app.Rows) *[]app.SettingsRecord { return &b.Settings })},
}

// into reads a row with scan and appends it to the slice of a batch that
// to picks.
func into[T any](scan func(scanner) (T, error), to func(*app.Rows) *[]T) func(*sql.Rows, *app.Rows) error {
	return func(r *sql.Rows, b *app.Rows) error {
		v, err := scan(r)
		*to(b) = append(*to(b), v)
		return err
	}
}

func scanFire(sc scanner) (f app.FireRecord, err error) {
	var fireAt, created int64
	var jobID sql.NullInt64
	err = sc.Scan(&f.Entry, &fireAt, &jobID, &created)
	f.FireAt, f.CreatedAt = fromMS(fireAt), fromMS(created)
	if jobID.Valid {
		f.JobID = &jobID.Int64
	}
	return f, err
}

func scanStepRecord(sc scanner) (rec app.StepRecord, err error) {
	var r stepRow
	if err := sc.Scan(append([]any{&rec.Position}, r.dest()...)...); err != nil {
		return rec, err
	}
	rec.Step, err = r.step()
	return rec, err
}

func scanEdgeRecord(sc scanner) (e app.EdgeRecord, err error) {
	err = sc.Scan(&e.WorkflowID, &e.Parent, &e.Child, &e.Continue, &e.Ord)
	return e, err
}
