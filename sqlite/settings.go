package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/queuehq/queue/app"
)

// Setting implements app.Tx.
func (w *wtx) Setting(kind, name string) (*app.SettingsRecord, error) {
	r, err := scanSetting(w.queryRow(`SELECT kind, name, value, updated_at, updated_by FROM runtime_settings
		WHERE kind = ? AND name = ?`, kind, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// PutSetting implements app.Tx.
func (w *wtx) PutSetting(r app.SettingsRecord) error {
	_, err := w.exec(`INSERT INTO runtime_settings (kind, name, value, updated_at, updated_by) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (kind, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
			updated_by = excluded.updated_by`, r.Kind, r.Name, string(r.Value), ms(r.UpdatedAt), r.UpdatedBy)
	return err
}

// DeleteSetting implements app.Tx.
func (w *wtx) DeleteSetting(kind, name string) error {
	_, err := w.exec(`DELETE FROM runtime_settings WHERE kind = ? AND name = ?`, kind, name)
	return err
}

func scanSetting(sc scanner) (*app.SettingsRecord, error) {
	var r app.SettingsRecord
	var value string
	var at int64
	if err := sc.Scan(&r.Kind, &r.Name, &value, &at, &r.UpdatedBy); err != nil {
		return nil, err
	}
	r.Value, r.UpdatedAt = []byte(value), fromMS(at)
	return &r, nil
}

// Settings implements app.SettingsStore.
func (s *Store) Settings(ctx context.Context) ([]app.SettingsRecord, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT kind, name, value, updated_at, updated_by FROM runtime_settings ORDER BY kind, name`)
	out, err := collect(rows, err, func(sc scanner) (app.SettingsRecord, error) {
		r, err := scanSetting(sc)
		if err != nil {
			return app.SettingsRecord{}, err
		}
		return *r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read runtime settings: %w", mapErr(err))
	}
	return out, nil
}
