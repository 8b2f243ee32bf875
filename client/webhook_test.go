package client_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/queuehq/queue/client"
	"github.com/queuehq/queue/webhook"
)

// A receiver of webhooks checks each request's signature with the
// subscription's secret before it trusts the body, and drops repeats of
// a Queue-Webhook-Id it handled (a delivery is retried until answered 2xx).
func ExampleVerifyWebhook() {
	const secret = "the-subscription-secret" // from the config or POST /api/webhooks
	seen := map[string]bool{}
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := client.VerifyWebhook(secret, r.Header, body, 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		if id := r.Header.Get("Queue-Webhook-Id"); !seen[id] {
			seen[id] = true
			fmt.Printf("%s: %s\n", r.Header.Get("Queue-Event"), body)
		}
		w.WriteHeader(http.StatusNoContent) // 2xx: delivered
	})
	srv := httptest.NewServer(receiver)
	defer srv.Close()

	// What the queue sends (package webhook signs it), twice, and a forgery.
	send := func(key string) int {
		body := []byte(`{"id":"42","type":"job.succeeded","job_id":7}`)
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
		req.Header.Set("Queue-Webhook-Id", "42")
		req.Header.Set("Queue-Event", "job.succeeded")
		req.Header.Set("Queue-Signature", webhook.Sign(key, time.Now(), body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println(send(secret), send(secret), send("a-guess-at-the-secret"))
	// Output:
	// job.succeeded: {"id":"42","type":"job.succeeded","job_id":7}
	// 204 204 401
}
