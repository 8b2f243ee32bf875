package sqlite

import (
	"strconv"
	"strings"
)

// callbackState is what the writer knows of callback_urls: whether a job
// (or dead-letter row) with one may exist. Until a job with one is
// inserted, a write that ends jobs need not look their callback_urls up
// (app.Settle asks for every job that ends): the completion hot path pays
// nothing while no job carries a callback_url.
type callbackState int8

const (
	callbacksUnknown callbackState = iota // not looked at yet (the store just opened)
	callbacksNone                         // none in either table
	callbacksSome                         // some may exist
)

// sawCallback notes that a job with a callback_url was inserted (or is
// about to be: a write that rolls back leaves the note, which only costs
// lookups).
func (w *wtx) sawCallback() { w.s.callbacks = callbacksSome }

// Callbacks implements app.Tx: the callback_urls of the jobs ids that have
// one, read from jobs and from the dead-letter table (a job that just
// moved there).
func (w *wtx) Callbacks(ids []int64) (map[int64]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if w.s.callbacks == callbacksUnknown {
		var some bool
		if err := w.queryRow(`SELECT EXISTS (SELECT 1 FROM jobs WHERE callback_url IS NOT NULL)
			OR EXISTS (SELECT 1 FROM dead_letter_jobs WHERE callback_url IS NOT NULL)`).Scan(&some); err != nil {
			return nil, err
		}
		w.s.callbacks = callbacksNone
		if some {
			w.s.callbacks = callbacksSome
		}
	}
	if w.s.callbacks == callbacksNone {
		return nil, nil
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	rows, err := w.query(`SELECT id, callback_url FROM jobs WHERE id IN (SELECT value FROM json_each(?1)) AND callback_url IS NOT NULL
		UNION ALL SELECT id, callback_url FROM dead_letter_jobs WHERE id IN (SELECT value FROM json_each(?1)) AND callback_url IS NOT NULL`, b.String())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var u string
		if err := rows.Scan(&id, &u); err != nil {
			return nil, err
		}
		out[id] = u
	}
	return out, rows.Err()
}
