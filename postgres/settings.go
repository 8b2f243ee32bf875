package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queuehq/queue/app"
)

// Setting implements app.Tx: the advisory lock of (kind, name) first, so
// two changes of one setting (also one not stored yet) on two nodes meet
// one after another.
func (w *wtx) Setting(kind, name string) (*app.SettingsRecord, error) {
	if _, err := w.exec(`SELECT pg_advisory_xact_lock($1)`, lockKey("setting", w.s.schema, kind, name)); err != nil {
		return nil, err
	}
	r, err := scanSetting(w.queryRow(`SELECT kind, name, value::text, updated_at, updated_by FROM runtime_settings
		WHERE kind = $1 AND name = $2`, kind, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return r, err
}

// PutSetting implements app.Tx.
func (w *wtx) PutSetting(r app.SettingsRecord) error {
	_, err := w.exec(`INSERT INTO runtime_settings (kind, name, value, updated_at, updated_by) VALUES ($1, $2, $3::json, $4, $5)
		ON CONFLICT (kind, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at,
			updated_by = excluded.updated_by`, r.Kind, r.Name, string(r.Value), ms(r.UpdatedAt), r.UpdatedBy)
	return err
}

// DeleteSetting implements app.Tx.
func (w *wtx) DeleteSetting(kind, name string) error {
	_, err := w.exec(`DELETE FROM runtime_settings WHERE kind = $1 AND name = $2`, kind, name)
	return err
}

func scanSetting(row pgx.Row) (*app.SettingsRecord, error) {
	var r app.SettingsRecord
	var value string
	var at time.Time
	if err := row.Scan(&r.Kind, &r.Name, &value, &at, &r.UpdatedBy); err != nil {
		return nil, err
	}
	r.Value, r.UpdatedAt = []byte(value), at.UTC()
	return &r, nil
}

// Settings implements app.SettingsStore: one small read, which every node
// makes every second.
func (s *Store) Settings(ctx context.Context) ([]app.SettingsRecord, error) {
	out, err := readRows(ctx, s, func(row pgx.Row) (app.SettingsRecord, error) {
		r, err := scanSetting(row)
		if err != nil {
			return app.SettingsRecord{}, err
		}
		return *r, nil
	}, `SELECT kind, name, value::text, updated_at, updated_by FROM runtime_settings ORDER BY kind COLLATE "C", name COLLATE "C"`)
	if err != nil {
		return nil, fmt.Errorf("read runtime settings: %w", err)
	}
	return out, nil
}
