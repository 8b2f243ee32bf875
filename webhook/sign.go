package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery (docs/integrations.md, "Webhooks").
const (
	// HeaderSignature carries "t=<unix seconds>,v1=<hex HMAC-SHA256>" (see Sign).
	HeaderSignature = "Queue-Signature"
	// HeaderID is the delivery job's id, the same on every retry of one
	// delivery: receivers drop a repeat of an id they handled.
	HeaderID = "Queue-Webhook-Id"
	// HeaderEvent is the event's type (job.succeeded, webhook.test, ...).
	HeaderEvent = "Queue-Event"
)

// DefaultTolerance is how far a signature's timestamp may be from the
// receiver's clock when Verify is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// ErrSignature is what Verify's errors match (errors.Is) when a request
// is not signed with the secret: the header is missing or malformed, no
// signature matches, or the timestamp is outside the tolerance.
var ErrSignature = errors.New("webhook signature")

// Sign returns the Queue-Signature value of body sent at t: "t=<unix
// seconds>,v1=<lowercase hex HMAC-SHA256(secret, "<unix seconds>.<body>")>".
// The timestamp inside the signed text stops a captured request from being
// replayed later (Verify refuses old ones).
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

// mac is HMAC-SHA256(secret, ts + "." + body).
func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks that body, received with header at now, was signed with
// secret less than tolerance ago (or ahead: clocks drift both ways); a
// tolerance <= 0 means DefaultTolerance. The comparison takes constant
// time. Several v1 values in one header are accepted (any may match), so
// a sender may sign with an old and a new secret while it rotates. Every
// error matches ErrSignature and says what is wrong, never the secret.
func Verify(secret string, header http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if secret == "" {
		return fmt.Errorf("%w: no secret to verify with", ErrSignature)
	}
	v := header.Get(HeaderSignature)
	if v == "" {
		return fmt.Errorf("%w: no %s header", ErrSignature, HeaderSignature)
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return fmt.Errorf("%w: %s is not of the form t=<unix seconds>,v1=<hex>", ErrSignature, HeaderSignature)
		}
		switch k {
		case "t":
			ts = val
		case "v1":
			if b, err := hex.DecodeString(val); err == nil && len(b) == sha256.Size {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: %s has no timestamp t=<unix seconds>", ErrSignature, HeaderSignature)
	}
	if len(sigs) == 0 {
		return fmt.Errorf("%w: %s has no v1=<64 hex digits>", ErrSignature, HeaderSignature)
	}
	if d := now.Sub(time.Unix(sec, 0)).Abs(); d > tolerance {
		return fmt.Errorf("%w: timestamp %d is %s from now, beyond the tolerance of %s (an old request replayed, or a clock off)",
			ErrSignature, sec, d.Round(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	match := false
	for _, s := range sigs {
		match = hmac.Equal(s, want) || match // every one compared: the time does not tell which matched
	}
	if !match {
		return fmt.Errorf("%w: no v1 signature matches the body (another secret, or the body changed on the way)", ErrSignature)
	}
	return nil
}
