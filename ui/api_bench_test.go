package ui_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// The API benchmarks price what the HTTP layer adds to a submit, a claim
// and a completion: the store is the in-memory one, so what is left is
// routing, the middleware, decoding and encoding. "handler" calls the
// handler directly (the server's share alone); "http" goes over a loopback
// connection with a plain net/http client kept alive (server and client):
//
//	go test ./ui -run '^$' -bench API -benchmem

const benchJob = `{"queue":"bench","kind":"email.send","payload":{"to":"someone@example.com","n":42}}`

func benchHandler(b *testing.B) http.Handler {
	b.Helper()
	bus := app.NewBus()
	clock := app.SystemClock{}
	store := memory.New(app.StoreOptions{Clock: clock, Bus: bus})
	svc := app.NewService(store, nil, clock, bus, zerolog.Nop())
	b.Cleanup(func() { svc.Stop(); store.Close() })
	return ui.New(ui.Options{Service: svc, Log: zerolog.Nop()})
}

// call is one request to h, straight or over srv.
type caller func(b *testing.B, method, path, body string) []byte

func direct(h http.Handler) caller {
	return func(b *testing.B, method, path, body string) []byte {
		req := httptest.NewRequest(method, path, bytes.NewReader([]byte(body)))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 300 {
			b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.Bytes())
		}
		return rec.Body.Bytes()
	}
}

func overHTTP(b *testing.B, h http.Handler) caller {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	hc := srv.Client()
	return func(b *testing.B, method, path, body string) []byte {
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader([]byte(body)))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
		}
		return out
	}
}

func benchBoth(b *testing.B, run func(b *testing.B, call caller)) {
	b.Run("handler", func(b *testing.B) { run(b, direct(benchHandler(b))) })
	b.Run("http", func(b *testing.B) { h := benchHandler(b); run(b, overHTTP(b, h)) })
}

// BenchmarkAPISubmit is POST /api/jobs with a small job.
func BenchmarkAPISubmit(b *testing.B) {
	benchBoth(b, func(b *testing.B, call caller) {
		b.ReportAllocs()
		for b.Loop() {
			call(b, http.MethodPost, "/api/jobs", benchJob)
		}
	})
}

// BenchmarkAPIClaimComplete is one claim of one job and its completion
// (POST /api/queues/bench/claim, POST /api/jobs/{id}/complete); the jobs
// are submitted before the clock starts.
func BenchmarkAPIClaimComplete(b *testing.B) {
	benchBoth(b, func(b *testing.B, call caller) {
		b.ReportAllocs()
		b.StopTimer()
		batch := `{"jobs":[` + benchJob
		for range 999 {
			batch += "," + benchJob
		}
		batch += "]}"
		left := 0
		b.StartTimer()
		for b.Loop() {
			if left == 0 {
				b.StopTimer()
				call(b, http.MethodPost, "/api/jobs/batch", batch)
				left = 1000
				b.StartTimer()
			}
			left--
			var got struct {
				Jobs []struct {
					ID    int64 `json:"id"`
					Lease int64 `json:"lease"`
				} `json:"jobs"`
			}
			if err := json.Unmarshal(call(b, http.MethodPost, "/api/queues/bench/claim", `{"worker_id":"w","limit":1}`), &got); err != nil || len(got.Jobs) != 1 {
				b.Fatalf("claim: %v %d jobs", err, len(got.Jobs))
			}
			j := got.Jobs[0]
			call(b, http.MethodPost, "/api/jobs/"+strconv.FormatInt(j.ID, 10)+"/complete", fmt.Sprintf(`{"lease":%d}`, j.Lease))
		}
	})
}
