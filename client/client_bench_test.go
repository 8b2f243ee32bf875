package client_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/memory"
	"github.com/queuehq/queue/ui"
)

// The client benchmarks price a Client's calls over a loopback connection
// to ui.New over the in-memory store (server and client in one profile;
// ui's BenchmarkAPI* price the server alone). They report the connections
// the server accepted per call: a kept-alive Client opens one per
// concurrent caller, not one per call.
//
//	go test ./client -run '^$' -bench Client -benchmem

func benchServer(b *testing.B) (*client.Client, *atomic.Int64) {
	b.Helper()
	bus := app.NewBus()
	store := memory.New(app.StoreOptions{Bus: bus})
	svc := app.NewService(store, nil, nil, bus, zerolog.Nop())
	srv := httptest.NewUnstartedServer(ui.New(ui.Options{Service: svc, Log: zerolog.Nop()}))
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	b.Cleanup(func() { svc.Stop(); srv.Close(); store.Close() })
	return client.New(srv.URL), &conns
}

var benchPayload = json.RawMessage(`{"to":"someone@example.com","n":42}`)

// BenchmarkClientSubmit is Client.Submit of a small job, from 8 goroutines.
func BenchmarkClientSubmit(b *testing.B) {
	cl, conns := benchServer(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(4) // 8 callers on 2 CPUs
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := cl.Submit(ctx, app.SubmitInput{Queue: "bench", Kind: "email.send", Payload: benchPayload}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/op")
}

// BenchmarkClientClaimComplete claims 100 jobs at a time and acknowledges
// them with one CompleteBatch, as a Worker does; per op is one job.
func BenchmarkClientClaimComplete(b *testing.B) {
	cl, conns := benchServer(b)
	ctx := context.Background()
	b.ReportAllocs()
	ins := make([]app.SubmitInput, 100)
	for i := range ins {
		ins[i] = app.SubmitInput{Queue: "bench", Kind: "email.send", Payload: benchPayload}
	}
	n := 0
	for b.Loop() {
		if n%100 == 0 {
			b.StopTimer()
			if _, err := cl.SubmitBatch(ctx, ins); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			jobs, err := cl.Claim(ctx, "bench", app.ClaimInput{WorkerID: "w", Limit: 100})
			if err != nil || len(jobs) != 100 {
				b.Fatalf("claim: %v, %d jobs", err, len(jobs))
			}
			items := make([]app.Completion, len(jobs))
			for i, j := range jobs {
				items[i] = app.Completion{ID: j.ID, Lease: j.Lease}
			}
			if _, err := cl.CompleteBatch(ctx, items); err != nil {
				b.Fatal(err)
			}
		}
		n++
	}
	b.ReportMetric(float64(conns.Load())/float64(b.N), "conns/op")
}
