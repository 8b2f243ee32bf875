package memory

// Callbacks implements app.Tx: the callback_urls of the jobs ids that have
// one, in jobs or in the dead-letter queue (a job that just moved there).
func (t *tx) Callbacks(ids []int64) (map[int64]string, error) {
	var out map[int64]string
	for _, id := range ids {
		u := ""
		if j, ok := t.s.jobs[id]; ok {
			u = j.CallbackURL
		} else if d, ok := t.s.dead[id]; ok {
			u = d.CallbackURL
		}
		if u != "" {
			if out == nil {
				out = map[int64]string{}
			}
			out[id] = u
		}
	}
	return out, nil
}
