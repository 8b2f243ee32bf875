package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/queuehq/queue/app"
)

// Defaults of the sender ([webhooks] in the config).
const (
	DefaultTimeout = 10 * time.Second // one request, from dial to the answer's end
	DefaultMaxBody = 1 << 20          // a body larger leaves the job's payload and result out
	// MaxAnswer is how much of a receiver's answer is read: enough for
	// the error text of a failure, never a receiver's whole download.
	MaxAnswer = 64 << 10
)

// RefusedError is a delivery to a target the policy refuses
// (app.WebhookTargets): a literal address or name in the URL, or an
// address the name resolved to when dialled. No retry fixes it, so the
// delivery dead-letters with this text.
type RefusedError struct {
	Target string // the URL, or the address dialled
	Err    error  // the policy's reason
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("target %s refused: %v", e.Target, e.Err)
}

// Unwrap returns the policy's reason.
func (e *RefusedError) Unwrap() error { return e.Err }

// NewHTTPClient returns the client deliveries are sent with, safe to point
// at URLs that users chose: targets.CheckIP is called on every address
// actually dialled, after DNS, so a name that resolves (or re-resolves:
// DNS rebinding) to a refused address never reaches it; redirects are not
// followed (a 3xx is the answer, a failure); no proxy from the environment
// is used (it would dial in the policy's stead); and a request takes at
// most timeout (if zero, DefaultTimeout), from dial to the answer's end.
func NewHTTPClient(targets app.WebhookTargets, timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	base := net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			host = "" // a literal address: no name for [webhooks] allow to match
		}
		d := base
		d.Control = func(_, address string, _ syscall.RawConn) error { // each address tried, after DNS
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &RefusedError{Target: address, Err: fmt.Errorf("not an IP address and port: %w", err)}
			}
			if err := targets.CheckIP(ap.Addr(), host); err != nil {
				return &RefusedError{Target: address, Err: err}
			}
			return nil
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil, // never HTTP(S)_PROXY: the proxy would reach what the dialer refuses
			DialContext:            dial,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           64,
			MaxIdleConnsPerHost:    4,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    timeout,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Answer is what a receiver answered.
type Answer struct {
	Status   int
	Body     []byte // at most MaxAnswer bytes
	Duration time.Duration
}

// post sends body to url with header and reads at most MaxAnswer of the answer.
func post(ctx context.Context, c *http.Client, url string, header http.Header, body []byte) (*Answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("webhook request: %w", err)
	}
	req.Header = header
	req.ContentLength = int64(len(body))
	began := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		var re *RefusedError
		if errors.As(err, &re) {
			return nil, re
		}
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer)) // the status came: a body cut short changes nothing
	return &Answer{Status: resp.StatusCode, Body: b, Duration: time.Since(began)}, nil
}
