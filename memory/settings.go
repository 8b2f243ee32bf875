package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/queuehq/queue/app"
)

// settingKey names a runtime setting: its kind and name.
type settingKey struct{ kind, name string }

// Setting implements app.Tx.
func (t *tx) Setting(kind, name string) (*app.SettingsRecord, error) {
	r, ok := t.s.settings[settingKey{kind, name}]
	if !ok {
		return nil, nil
	}
	r.Value = slices.Clone(r.Value)
	return &r, nil
}

// PutSetting implements app.Tx.
func (t *tx) PutSetting(r app.SettingsRecord) error {
	if t.s.settings == nil {
		t.s.settings = map[settingKey]app.SettingsRecord{}
	}
	r.Value = slices.Clone(r.Value)
	r.UpdatedAt = r.UpdatedAt.UTC()
	put(t, t.s.settings, settingKey{r.Kind, r.Name}, r)
	return nil
}

// DeleteSetting implements app.Tx.
func (t *tx) DeleteSetting(kind, name string) error {
	del(t, t.s.settings, settingKey{kind, name})
	return nil
}

// Settings implements app.SettingsStore.
func (s *Store) Settings(ctx context.Context) ([]app.SettingsRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]app.SettingsRecord, 0, len(s.settings))
	for _, r := range s.settings {
		r.Value = slices.Clone(r.Value)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b app.SettingsRecord) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}
