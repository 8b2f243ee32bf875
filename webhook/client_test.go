package webhook_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/webhook"
)

// counting is a receiver that counts its requests and answers with h.
func counting(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func ok(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }

// The dialer checks the address it connects to, after DNS: 127.0.0.1 and
// a name that resolves to it (localhost stands in for a rebinding name)
// are refused unless [webhooks] allow or allow_private lets them; the
// receiver never sees a refused request.
func TestClientDialerRefusesLoopbackUnlessAllowed(t *testing.T) {
	srv, n := counting(t, ok)
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	for _, c := range []struct {
		name    string
		targets app.WebhookTargets
		url     string
		allowed bool
	}{
		{"literal loopback", app.WebhookTargets{}, srv.URL, false},
		{"name resolving to loopback", app.WebhookTargets{}, "http://localhost" + port, false},
		{"another address allowed", app.WebhookTargets{Allow: []string{"10.0.0.0/8", "hooks.example.com"}}, srv.URL, false},
		{"allowed by address", app.WebhookTargets{Allow: []string{"127.0.0.1"}}, srv.URL, true},
		{"allowed by prefix", app.WebhookTargets{Allow: []string{"127.0.0.0/8", "::1"}}, "http://localhost" + port, true},
		{"allowed by name", app.WebhookTargets{Allow: []string{"localhost"}}, "http://localhost" + port, true},
		{"allow_private", app.WebhookTargets{AllowPrivate: true}, srv.URL, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := n.Load()
			resp, err := webhook.NewHTTPClient(c.targets, 5*time.Second).Post(c.url, "application/json", strings.NewReader("{}"))
			if c.allowed {
				if err != nil {
					t.Fatalf("POST %s with %+v: %v, want it sent", c.url, c.targets, err)
				}
				resp.Body.Close()
				if n.Load() != before+1 {
					t.Fatalf("the receiver got %d requests, want 1", n.Load()-before)
				}
				return
			}
			var re *webhook.RefusedError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), "refused as a webhook target") || !strings.Contains(err.Error(), "allow") {
				t.Fatalf("POST %s with %+v: %v, want a RefusedError naming the allow keys", c.url, c.targets, err)
			}
			if resp != nil {
				resp.Body.Close()
			}
			if n.Load() != before {
				t.Fatal("a refused target received the request")
			}
		})
	}
}

// A redirect is the answer, never followed: the second server sees
// nothing; no proxy of the environment stands between.
func TestClientFollowsNoRedirectAndNoProxy(t *testing.T) {
	other, hits := counting(t, ok)
	srv, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
	})
	c := webhook.NewHTTPClient(app.WebhookTargets{AllowPrivate: true}, 5*time.Second)
	resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || hits.Load() != 0 {
		t.Fatalf("status %d, the redirect's target got %d requests; want 307 and none", resp.StatusCode, hits.Load())
	}
	if tr, ok := c.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Fatal("the client's transport takes a proxy (HTTP_PROXY would dial in the dialer's stead)")
	}
}

// bytes.Repeat, for answers.
var big = bytes.Repeat([]byte("x"), 1<<20)
