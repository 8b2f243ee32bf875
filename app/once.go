package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// OnceAcquire takes the once-record key for holdFor with a new token, or
// reports that it is done (the record without its token) or held by another
// live run (ErrOnceHeld). A lapsed hold is taken over: the run that held it
// is presumed dead.
func OnceAcquire(ctx context.Context, w Writer, key string, holdFor time.Duration) (*OnceRecord, error) {
	var rec *OnceRecord
	err := w.Write(ctx, func(tx Tx) error {
		r, err := tx.Once(key)
		if err != nil {
			return err
		}
		now := tx.Now().Truncate(time.Millisecond)
		switch {
		case r.Done:
			r.Token = ""
			rec = r
			return nil
		case r.HeldUntil != nil && r.HeldUntil.After(now):
			return fmt.Errorf("once %q: %w", key, ErrOnceHeld)
		}
		held := now.Add(holdFor).Truncate(time.Millisecond)
		r.Token, r.HeldUntil = newToken(), &held
		if err := tx.SaveOnce(r); err != nil {
			return err
		}
		r.Acquired, rec = true, r
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("acquire once %q: %w", key, err)
	}
	return rec, nil
}

// OnceDone stores result (JSON null if empty) for key held with token and
// returns the record; finishing a done record again changes nothing.
func OnceDone(ctx context.Context, w Writer, key, token string, result json.RawMessage) (*OnceRecord, error) {
	var rec *OnceRecord
	err := w.Write(ctx, func(tx Tx) error {
		r, err := tx.Once(key)
		switch {
		case err != nil:
			return err
		case r.Token == "": // never acquired: Once made it for this call, which rolls back
			return fmt.Errorf("once %q: %w", key, ErrNotFound)
		case r.Token != token:
			return fmt.Errorf("once %q is held by another run: %w", key, ErrLeaseLost)
		case r.Done:
			rec = r
			return nil
		}
		now := tx.Now().Truncate(time.Millisecond)
		r.Done, r.Result, r.DoneAt, r.HeldUntil = true, slices.Clone(result), &now, nil
		if len(r.Result) == 0 {
			r.Result = json.RawMessage("null")
		}
		rec = r
		return tx.SaveOnce(r)
	})
	if err != nil {
		return nil, fmt.Errorf("finish once %q: %w", key, err)
	}
	return rec, nil
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
