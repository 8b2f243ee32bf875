package postgres

// Callbacks implements app.Tx: the callback_urls of the jobs ids that have
// one, read from jobs (through the partial index of jobs with one) and
// from the dead-letter table (a job that just moved there).
func (w *wtx) Callbacks(ids []int64) (map[int64]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := w.query(`SELECT id, callback_url FROM jobs WHERE id = ANY($1) AND callback_url IS NOT NULL
		UNION ALL SELECT id, callback_url FROM dead_letter_jobs WHERE id = ANY($1) AND callback_url IS NOT NULL`, ids)
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
