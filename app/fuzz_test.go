package app_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
)

// The seed corpus runs in `make test`; `go test -fuzz=FuzzX ./app` explores.

func FuzzSubmitInput(f *testing.F) {
	for _, s := range []string{
		`{"kind":"k"}`, `{"kind":"k","queue":"q","payload":{"a":[1,2]},"priority":-1000,"delay":"5s","tags":["a"]}`,
		`{"kind":"k","run_at":"2030-01-01T00:00:00Z","ttl":30,"max_attempts":1000,"timeout":"24h"}`,
		`{"kind":"k","delay":"-1s"}`, `{"kind":"k","delay":1e300}`, `{"kind":"","queue":"a b"}`,
		`{"kind":"k","expires_at":"0001-01-01T00:00:00Z"}`, `{"kind":"k","payload":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	cfg := app.DefaultConfig()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		var in app.SubmitInput
		if json.Unmarshal(b, &in) != nil {
			return
		}
		nj, err := in.NewJob(cfg, now)
		if err != nil {
			var ie *app.InvalidError
			if !errors.As(err, &ie) || ie.Message == "" {
				t.Fatalf("error is not an InvalidError with a message: %v", err)
			}
			return
		}
		// What passes validation is within the contract.
		if app.ValidateQueue(nj.Queue) != nil || app.ValidateKind(nj.Kind) != nil || !json.Valid(nj.Payload) ||
			len(nj.Payload) > app.MaxPayloadBytes || nj.Priority < -1000 || nj.Priority > 1000 ||
			nj.MaxAttempts < 1 || nj.MaxAttempts > 1000 || nj.Timeout <= 0 || nj.Timeout > app.MaxTimeout ||
			len(nj.Tags) > app.MaxTags || len(nj.IdempotencyKey) > app.MaxKeyLength || nj.RunAt.IsZero() {
			t.Fatalf("accepted out-of-contract job %+v", nj)
		}
	})
}

func FuzzDecodeCursor(f *testing.F) {
	for _, s := range []string{app.EncodeCursor(1, true), app.EncodeCursor(1<<62, false), "", "' OR 1=1", "ZA", "YTA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		id, asc, err := app.DecodeCursor(c)
		if err != nil {
			return
		}
		if id <= 0 {
			t.Fatalf("DecodeCursor(%q) = %d", c, id)
		}
		if again, asc2, err := app.DecodeCursor(app.EncodeCursor(id, asc)); err != nil || again != id || asc2 != asc {
			t.Fatalf("re-encoding %q: %d %v %v", c, again, asc2, err)
		}
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30s", "7d", "1.5", "-3h", "1e9", "9999999999d", "5 s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := app.ParseDuration(s)
		if err == nil && strings.TrimSpace(s) == "" {
			t.Fatalf("empty %q parsed as %v", s, d)
		}
		var ad app.Duration
		b, _ := json.Marshal(s)
		if err := ad.UnmarshalJSON(b); err == nil && ad.D() != d {
			t.Fatalf("JSON and text parse differ for %q: %v vs %v", s, ad.D(), d)
		}
	})
}
