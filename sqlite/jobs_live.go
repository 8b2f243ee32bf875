package sqlite

import (
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/queuehq/queue/app"
)

// The live filters (app/jobs_live.go) in SQLite: what they match is app's
// rule. A payload filter calls that rule itself, through the SQL function
// queue_payload_holds (JSON1 would differ on a key given twice, where it
// takes the first and app the last, and on numbers beyond a float64). It
// reads each row the other conditions leave (no index covers a payload
// field); they come first in the WHERE.

// payloadHoldsFunc is the SQL function queue_payload_holds(payload, path,
// value): 1 if app.PayloadHolds(payload, {path split at ".", value}), else
// 0. Path steps are [A-Za-z0-9_-] (app.ParsePayloadPath), so "." cannot be
// in one.
const payloadHoldsFunc = "queue_payload_holds"

func init() {
	if err := sqlite.RegisterDeterministicScalarFunction(payloadHoldsFunc, 3, payloadHolds); err != nil {
		panic(fmt.Sprintf("sqlite: register %s: %v", payloadHoldsFunc, err))
	}
}

func payloadHolds(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	var doc []byte
	switch v := args[0].(type) {
	case string:
		doc = []byte(v)
	case []byte:
		doc = v
	default:
		return int64(0), nil
	}
	path, _ := args[1].(string)
	value, _ := args[2].(string)
	if app.PayloadHolds(doc, app.PayloadMatch{Path: strings.Split(path, "."), Value: value}) {
		return int64(1), nil
	}
	return int64(0), nil
}

// payloadCond is a payload filter on table's payload.
func payloadCond(w *where, table string, pm app.PayloadMatch) {
	w.add(payloadHoldsFunc+"("+table+".payload, ?, ?)", strings.Join(pm.Path, "."), pm.Value)
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
