package sqlite

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// The live filters (app/jobs_live.go) in SQLite's JSON1: what they match
// is app's rule; this is only how SQLite says it. A payload filter reads
// each row the other conditions leave (no index covers a payload field).

// payloadPath is a payload filter's path in JSON1's form: $."key"[0]."sku".
func payloadPath(steps []string) string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range steps {
		if isIndex(s) {
			b.WriteString("[" + s + "]")
		} else {
			b.WriteString(`."` + s + `"`) // keys are [A-Za-z0-9_-]: nothing to escape
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil && !strings.ContainsAny(s, "+-")
}

// payloadCond is a payload filter on table's payload: by the JSON type at
// the path, a string equal to the value, a number equal to it (if it is
// one), or the literal it names.
func payloadCond(w *where, table string, pm app.PayloadMatch) {
	col, path := table+".payload", payloadPath(pm.Path)
	q := "(CASE json_type(" + col + ", ?) WHEN 'text' THEN json_extract(" + col + ", ?) = ?"
	args := []any{path, path, pm.Value}
	switch pm.Value {
	case "true", "false", "null":
		q += " WHEN '" + pm.Value + "' THEN 1"
	}
	if app.PayloadNumber(pm.Value) {
		var n any
		if i, err := strconv.ParseInt(pm.Value, 10, 64); err == nil {
			n = i
		} else {
			n, _ = strconv.ParseFloat(pm.Value, 64)
		}
		q += " WHEN 'integer' THEN json_extract(" + col + ", ?) = ? WHEN 'real' THEN json_extract(" + col + ", ?) = ?"
		args = append(args, path, n, path, n)
	}
	w.add(q+" ELSE 0 END)", args...)
}

// errorCond is an error-text filter (folded already) on table's errors:
// SQLite's lower folds ASCII letters only, as app.FoldASCII does; instr
// knows no wildcards.
func errorCond(w *where, table, folded string) {
	w.add("EXISTS (SELECT 1 FROM json_each("+table+".errors) AS e WHERE instr(lower(json_extract(e.value, '$.error')), ?) > 0)", folded)
}

// Reschedule implements app.Tx.
func (w *wtx) Reschedule(j *app.Job, runAt time.Time) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`UPDATE jobs SET run_at = ?, updated_at = ? WHERE id = ? AND status = 'queued' RETURNING `+jobCols,
		ms(runAt), ms(w.now), j.ID))
	if err != nil {
		return nil, fmt.Errorf("reschedule job %d: %w", j.ID, err)
	}
	return job, nil
}

// Reprioritize implements app.Tx.
func (w *wtx) Reprioritize(j *app.Job, priority int) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`UPDATE jobs SET priority = ?, updated_at = ? WHERE id = ? AND status = 'queued' RETURNING `+jobCols,
		priority, ms(w.now), j.ID))
	if err != nil {
		return nil, fmt.Errorf("reprioritize job %d: %w", j.ID, err)
	}
	return job, nil
}
