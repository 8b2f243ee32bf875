package ui_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/ui"
)

// openStream opens GET /api/events and reads its first line; close ends it.
func (s *server) openStream() (close func()) {
	s.t.Helper()
	ctx, cancel := context.WithCancel(s.t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET /api/events: %d", resp.StatusCode)
	}
	if l, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.HasPrefix(l, ": connected") {
		s.t.Fatalf("first line of the stream: %q %v", l, err)
	}
	return func() { cancel(); resp.Body.Close() }
}

// getCtx is get with ctx; a body that does not end by ctx's deadline fails the test.
func (s *server) getCtx(ctx context.Context, path string) answer {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("GET %s: %d, body: %v", path, resp.StatusCode, err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// The stream beyond MaxStreams is refused with 503 unavailable and a
// Retry-After before any stream header; a closed stream frees its place.
func TestEventStreamsAreCapped(t *testing.T) {
	s := newServer(t, ui.Options{MaxStreams: 2}, false)
	first := s.openStream()
	defer s.openStream()()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // a stream let through would never end
	defer cancel()
	a := s.getCtx(ctx, "/api/events")
	if a.status != http.StatusServiceUnavailable || a.code(t) != "unavailable" || a.header.Get("Retry-After") != "1" ||
		a.header.Get("Content-Type") == "text/event-stream" {
		t.Fatalf("third stream of 2: %d %v %s, want 503 unavailable with Retry-After: 1", a.status, a.header, a.body)
	}
	first()
	deadline := time.Now().Add(5 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.url+"/api/events", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream after one of 2 closed: %d 5s later, want 200", resp.StatusCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Beyond server.max_waiters long polls, a claim or get that would wait
// answers 503 unavailable with Retry-After; a place comes back when a wait ends.
func TestLongPollsAreCappedOverHTTP(t *testing.T) {
	s := newServer(t, ui.Options{}, false)
	s.svc.Config.MaxWaiters = 2
	id := num(s.submit(`{"queue":"held","kind":"k"}`), "id")
	cancels := make([]context.CancelFunc, 2)
	done := make(chan int, 2)
	for i := range cancels {
		ctx, cancel := context.WithCancel(t.Context())
		cancels[i] = cancel
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/api/queues/lp-%d/claim", s.url, i), strings.NewReader(`{"wait":"30s"}`))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				done <- resp.StatusCode
				return
			}
			done <- 0
		}()
	}
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for deadline := time.Now().Add(5 * time.Second); s.svc.Waiting() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d long polls waiting, want 2", s.svc.Waiting())
		}
	}
	for _, a := range []answer{
		s.post("/api/queues/lp-x/claim", `{"wait":"1s"}`), // if let through, it ends soon
		s.get(fmt.Sprintf("/api/jobs/%d?wait=1s", id)),
	} {
		if a.status != http.StatusServiceUnavailable || a.code(t) != "unavailable" || a.header.Get("Retry-After") != "1" {
			t.Fatalf("the third long poll of 2: %d %v %s, want 503 unavailable with Retry-After: 1", a.status, a.header, a.body)
		}
	}
	if a := s.post("/api/queues/lp-x/claim", `{"wait":"0s"}`); a.status != http.StatusOK {
		t.Fatalf("a claim without a wait while the cap is full: %d %s", a.status, a.body)
	}
	cancels[0]()
	<-done
	for deadline := time.Now().Add(5 * time.Second); s.svc.Waiting() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d long polls waiting after one left, want 1", s.svc.Waiting())
		}
	}
	if a := s.post("/api/queues/lp-x/claim", `{"wait":"20ms"}`); a.status != http.StatusOK {
		t.Fatalf("a long poll after a place came back: %d %s", a.status, a.body)
	}
	if n := s.svc.Waiting(); n != 1 {
		t.Fatalf("%d long polls waiting after the last one answered, want 1", n)
	}
}
