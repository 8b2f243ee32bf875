package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// callbacks is what the writer knows of callback_urls: whether a job
// with one may exist. Until a job with one is inserted, a write that ends
// jobs need not look their callback_urls up (app.Settle asks for every job
// that ends): the completion hot path pays nothing while no job carries a
// callback_url. Open reads it (loadCallbacks); the writer goroutine alone
// sets it after.
type callbackState bool

// loadCallbacks notes, at Open, whether a job with a callback_url exists
// (the partial index of such jobs answers at once). Dead-letter rows are
// not looked at: their jobs have ended, and a replay inserts a job.
func (s *Store) loadCallbacks(ctx context.Context, conn *sql.Conn) error {
	var some bool
	if err := conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE callback_url IS NOT NULL)`).Scan(&some); err != nil {
		return fmt.Errorf("open sqlite %s: look for callbacks: %w", s.path, err)
	}
	s.callbacks = callbackState(some)
	return nil
}

// sawCallback notes that a job with a callback_url was inserted (or is
// about to be: a write that rolls back leaves the note, which only costs
// lookups).
func (w *wtx) sawCallback() { w.s.callbacks = true }

// Callbacks implements app.Tx: the callback_urls of the jobs ids that have
// one, read from jobs and from the dead-letter table (a job that just
// moved there); none at once while no job with one was seen.
func (w *wtx) Callbacks(ids []int64) (map[int64]string, error) {
	if len(ids) == 0 || !w.s.callbacks {
		return nil, nil
	}
	list, _ := json.Marshal(ids) // one statement for any number of ids (json_each), not one per count
	rows, err := w.query(`SELECT id, callback_url FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) AND callback_url IS NOT NULL
		UNION ALL SELECT id, callback_url FROM dead_letter_jobs WHERE id IN (SELECT value FROM json_each(?1)) AND callback_url IS NOT NULL`, string(list))
	found, err := collect(rows, err, func(sc scanner) (c callback, err error) { return c, sc.Scan(&c.id, &c.url) })
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(found))
	for _, c := range found {
		out[c.id] = c.url
	}
	return out, nil
}

// callback is one job's callback_url, as Callbacks reads it.
type callback struct {
	id  int64
	url string
}
