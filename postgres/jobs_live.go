package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/queuehq/queue/app"
)

// The live filters (app/jobs_live.go) over the json columns payload and
// errors: what they match is app's rule; this is only how PostgreSQL says
// it. A payload filter reads each row the other conditions leave (no index
// covers a payload field). Nothing here can raise an error on a stored
// row: a number is cast only when its exponent is small, and a document
// holding a \u0000 escape is read with U+FFFD there (PostgreSQL cannot
// hold a NUL as text, and its json operators refuse the whole document).

// noNUL is the json column col with its \u0000 escapes read as U+FFFD:
// escaped backslashes step aside (a raw chr(1) cannot be in JSON text)
// while those escapes are replaced. A document without one (strpos, cheap)
// is taken as it is.
func noNUL(col string) string {
	const bs = "chr(92)"
	return "(CASE WHEN strpos(" + col + "::text, " + bs + " || 'u0000') = 0 THEN " + col + " ELSE replace(replace(replace(" + col + "::text, " +
		bs + " || " + bs + ", chr(1)), " + bs + " || 'u0000', " + bs + " || 'ufffd'), chr(1), " + bs + " || " + bs + ")::json END)"
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// payloadCond is a payload filter. PostgreSQL's #> takes a step of digits
// as an object key too, and "-1" as the last element of an array: each
// step's container is checked to be what app's rule says (an array for an
// index, an object for a key).
func payloadCond(w *where, pm app.PayloadMatch) {
	var conds []string
	for i, step := range pm.Path {
		kind := "object"
		if isIndex(step) {
			kind = "array"
		}
		conds = append(conds, "json_typeof(p #> "+w.add(pm.Path[:i:i])+"::text[]) = '"+kind+"'")
	}
	path := w.add(pm.Path) + "::text[]"
	at := "p #> " + path
	q := "CASE json_typeof(" + at + ") WHEN 'string' THEN (p #>> " + path + ") = " + w.add(pm.Value)
	switch pm.Value {
	case "true", "false":
		q += " WHEN 'boolean' THEN (" + at + ")::text = '" + pm.Value + "'"
	case "null":
		q += " WHEN 'null' THEN true"
	}
	if app.PayloadNumber(pm.Value) {
		q += " WHEN 'number' THEN CASE WHEN (" + at + ")::text ~ '[eE][+-]?0*[0-9]{4,}$' THEN false ELSE (" + at + ")::text::numeric = " +
			w.add(pm.Value) + "::numeric END"
	}
	conds = append(conds, q+" ELSE false END")
	w.cond("coalesce((SELECT " + strings.Join(conds, " AND ") + " FROM (SELECT " + noNUL("payload") + " AS p) AS doc), false)")
}

// errorCond is an error-text filter (folded already): translate folds
// ASCII letters only, as app.FoldASCII does; strpos knows no wildcards.
func errorCond(w *where, folded string) {
	w.cond("EXISTS (SELECT 1 FROM json_array_elements(" + noNUL("errors") + ") AS e(v) WHERE strpos(translate(e.v ->> 'error', " +
		"'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz'), " + w.add(folded) + ") > 0)")
}

// Reschedule implements app.Tx.
func (w *wtx) Reschedule(j *app.Job, runAt time.Time) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`UPDATE jobs SET run_at = $1, updated_at = $2 WHERE id = $3 AND status = 'queued' RETURNING `+jobCols,
		ms(runAt), w.now, j.ID))
	if err != nil {
		return nil, fmt.Errorf("reschedule job %d: %w", j.ID, err)
	}
	return job, nil
}

// Reprioritize implements app.Tx.
func (w *wtx) Reprioritize(j *app.Job, priority int) (*app.Job, error) {
	job, err := scanJob(w.queryRow(`UPDATE jobs SET priority = $1, updated_at = $2 WHERE id = $3 AND status = 'queued' RETURNING `+jobCols,
		priority, w.now, j.ID))
	if err != nil {
		return nil, fmt.Errorf("reprioritize job %d: %w", j.ID, err)
	}
	return job, nil
}
