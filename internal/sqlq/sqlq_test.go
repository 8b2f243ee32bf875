package sqlq

import "testing"

func TestPage(t *testing.T) {
	for _, c := range []struct {
		asc    bool
		n, def int
		cols   []string
		want   string
	}{
		{false, 0, 50, []string{"id"}, " ORDER BY id DESC LIMIT 50"},
		{true, 7, 50, []string{"moved_to_dead_letter_at", "id"}, " ORDER BY moved_to_dead_letter_at ASC, id ASC LIMIT 7"},
		{false, -3, 10, []string{"a", "b"}, " ORDER BY a DESC, b DESC LIMIT 10"},
	} {
		if got := Page(c.asc, c.n, c.def, c.cols...); got != c.want {
			t.Errorf("Page(%v, %d, %d, %v) = %q, want %q", c.asc, c.n, c.def, c.cols, got, c.want)
		}
	}
}

func TestSetQueue(t *testing.T) {
	if got, want := SetQueue(true, "paused", "paused_at"),
		"INSERT INTO queues (name, paused, paused_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at"; got != want {
		t.Errorf("SetQueue(dollar) = %q, want %q", got, want)
	}
	if got, want := SetQueue(false, "rate_tokens"),
		"INSERT INTO queues (name, rate_tokens) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET rate_tokens = excluded.rate_tokens"; got != want {
		t.Errorf("SetQueue = %q, want %q", got, want)
	}
}
