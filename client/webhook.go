package client

import (
	"net/http"
	"time"

	"github.com/queuehq/queue/webhook"
)

// VerifyWebhook checks that a webhook or callback request the queue sent
// is genuine: its Queue-Signature header signs body with secret (the
// subscription's, or the server's callback secret), and its timestamp is
// within tolerance of this machine's clock (if zero, 5 minutes), so a
// captured request cannot be replayed later. Give it the raw body, before
// any JSON decoding. The error says what is wrong, never the secret; it
// matches webhook.ErrSignature. Receivers should also drop a repeat of a
// Queue-Webhook-Id they handled: a delivery is retried until answered 2xx.
func VerifyWebhook(secret string, header http.Header, body []byte, tolerance time.Duration) error {
	return webhook.Verify(secret, header, body, time.Now(), tolerance)
}
