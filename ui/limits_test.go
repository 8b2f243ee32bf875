package ui_test

import (
	"bufio"
	"context"
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
