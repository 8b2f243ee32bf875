package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queuehq/queue/webhook"
)

const secret = "s3cret-s3cret-s3cret"

func TestSignFormat(t *testing.T) {
	at := time.Unix(1700000000, 0)
	body := []byte(`{"id":"7"}`)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("1700000000." + string(body)))
	want := "t=1700000000,v1=" + hex.EncodeToString(m.Sum(nil))
	if got := webhook.Sign(secret, at, body); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func signed(v string) http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderSignature, v)
	return h
}

func TestVerify(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"id":"7","type":"job.succeeded"}`)
	good := webhook.Sign(secret, now.Add(-time.Minute), body)
	_, v1, _ := strings.Cut(good, ",")
	other := webhook.Sign("another-secret-0000", now, body)
	_, otherV1, _ := strings.Cut(other, ",")
	ts := func(d time.Duration) string { return "t=" + strconv.FormatInt(now.Add(d).Unix(), 10) }
	for _, c := range []struct {
		name   string
		header http.Header
		body   []byte
		secret string
		tol    time.Duration
		ok     bool
		says   string
	}{
		{"valid", signed(good), body, secret, 0, true, ""},
		{"valid among others", signed(ts(-time.Minute) + "," + otherV1 + "," + v1), body, secret, 0, true, ""},
		{"body changed", signed(good), []byte(`{"id":"8","type":"job.succeeded"}`), secret, 0, false, "no v1 signature matches"},
		{"other secret", signed(good), body, "another-secret-0000", 0, false, "no v1 signature matches"},
		{"no header", http.Header{}, body, secret, 0, false, "no Queue-Signature header"},
		{"no secret", signed(good), body, "", 0, false, "no secret"},
		{"stale", signed(good), body, secret, 30 * time.Second, false, "beyond the tolerance"},
		{"from the future", signed(webhook.Sign(secret, now.Add(10*time.Minute), body)), body, secret, 0, false, "beyond the tolerance"},
		{"timestamp swapped", signed(ts(0) + "," + v1), body, secret, 0, false, "no v1 signature matches"},
		{"no timestamp", signed(v1), body, secret, 0, false, "no timestamp"},
		{"no v1", signed(ts(0)), body, secret, 0, false, "no v1="},
		{"v1 not hex", signed(ts(0) + ",v1=zz"), body, secret, 0, false, "no v1="},
		{"garbage", signed("hello"), body, secret, 0, false, "not of the form"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := webhook.Verify(c.secret, c.header, c.body, now, c.tol)
			if c.ok {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, webhook.ErrSignature) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Verify = %v, want ErrSignature saying %q", err, c.says)
			}
			if c.secret != "" && strings.Contains(err.Error(), c.secret) {
				t.Fatalf("Verify's error %q shows the secret", err)
			}
		})
	}
}
