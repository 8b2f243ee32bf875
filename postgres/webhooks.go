package postgres

import "github.com/jackc/pgx/v5"

// Callbacks implements app.Tx: the callback_urls of the jobs ids that have
// one, read from jobs (through the partial index of jobs with one) and
// from the dead-letter table (a job that just moved there).
func (w *wtx) Callbacks(ids []int64) (map[int64]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := w.query(`SELECT id, callback_url FROM jobs WHERE id = ANY($1) AND callback_url IS NOT NULL
		UNION ALL SELECT id, callback_url FROM dead_letter_jobs WHERE id = ANY($1) AND callback_url IS NOT NULL`, ids)
	found, err := collect(rows, err, func(r pgx.Row) (c callback, err error) { return c, r.Scan(&c.id, &c.url) })
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
