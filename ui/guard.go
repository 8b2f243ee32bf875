package ui

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
)

// pageBodyLimit caps the body of every page (non-API) request: the forms
// of the UI are a few hundred bytes, and /login is public.
const pageBodyLimit = 64 << 10

// hosts decides which Host headers the server answers. A page on another
// site can make a browser send it requests under a name the attacker
// controls (DNS rebinding: the name first points at the attacker, then at
// 127.0.0.1); the browser then treats our answers as that site's, so it may
// read them and send anything. Refusing unknown names shuts that door; a
// client that types an address (curl, the CLI, the Go package, a remote
// worker) uses a name on the list or an IP.
type hosts struct {
	any      bool
	names    map[string]bool
	suffixes []string // from "*.example.com": ".example.com"
	ips      map[string]bool
	anyIP    bool // listening on every address: any IP literal reaches us
}

// newHosts builds the list: loopback names and addresses always; the
// listen address; when it is every address (0.0.0.0 or ::), any IP literal
// and this machine's host name; and the configured names.
func newHosts(listen string, allowed []string) *hosts {
	h := &hosts{names: map[string]bool{"localhost": true}, ips: map[string]bool{}}
	if host, _, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() || host == "" {
			h.anyIP = true
			if hn, err := os.Hostname(); err == nil && hn != "" {
				h.names[strings.ToLower(hn)] = true
				if short, _, ok := strings.Cut(hn, "."); ok {
					h.names[strings.ToLower(short)] = true
				}
			}
		} else if ip != nil {
			h.ips[ip.String()] = true
		} else {
			h.names[strings.ToLower(host)] = true
		}
	}
	for _, a := range allowed {
		a = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(a), "."))
		switch {
		case a == "*":
			h.any = true
		case strings.HasPrefix(a, "*."):
			h.suffixes = append(h.suffixes, a[1:])
		case net.ParseIP(strings.Trim(a, "[]")) != nil:
			h.ips[net.ParseIP(strings.Trim(a, "[]")).String()] = true
		case a != "":
			h.names[a] = true
		}
	}
	return h
}

// allows reports whether a request's Host (with or without a port) is one
// this server answers to.
func (h *hosts) allows(hostport string) bool {
	if h.any {
		return true
	}
	host := hostport
	if hh, _, err := net.SplitHostPort(hostport); err == nil {
		host = hh
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || h.anyIP || h.ips[ip.String()]
	}
	if h.names[host] || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

// errCrossSite refuses a state-changing request a browser sent for another site.
var errCrossSite = newError(http.StatusForbidden, "cross_site",
	"this request came from a page of another site (its Origin or Sec-Fetch-Site says so); nothing was changed. Scripts and the CLI send no Origin")

// browserGuard keeps pages of other sites from using the operator's
// browser against the server, with or without tokens (SPEC section 4):
//   - every request must carry a Host on the list (health checks excepted);
//   - a state-changing request (not GET, HEAD or OPTIONS) is refused when
//     Sec-Fetch-Site says cross-site or same-site, or when it has an Origin
//     that is not this server (including "null": sandboxed frames);
//   - a state-changing API request with a body must say application/json,
//     which no form or no-cors fetch can send without a CORS preflight the
//     server never grants; a page request must be a small form.
//
// Clients that are not browsers send none of these headers and are not affected.
func (h *handler) browserGuard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !h.hosts.allows(r.Host) && !healthPath(r.URL.Path) {
			return newError(http.StatusMisdirectedRequest, "host_not_allowed",
				"this server does not answer to the name %q (a guard against DNS rebinding): add it to allowed_hosts in [server] of the config, or QUEUE_ALLOWED_HOSTS", clip(r.Host))
		}
		if safeMethod(r.Method) {
			return next(c)
		}
		if crossSite(r, isAPI(c)) {
			return errCrossSite
		}
		if isAPI(c) {
			if err := jsonBody(r); err != nil {
				return err
			}
			return next(c)
		}
		if err := formBody(c); err != nil {
			return err
		}
		return next(c)
	}
}

func healthPath(p string) bool { return p == "/healthz" || p == "/readyz" }

// crossSite reports whether the browser says the request comes from a page
// that is not this server's. Origin "null" (a sandboxed frame, a file) is
// refused on the API, which no page of ours calls; on pages it is what a
// browser sends for our own forms under Referrer-Policy: no-referrer, and
// the form's CSRF token decides.
func crossSite(r *http.Request, api bool) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return true
	}
	o := r.Header.Get("Origin")
	switch {
	case o == "":
		return false
	case o == "null":
		return api
	}
	u, err := url.Parse(o)
	return err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host)
}

// jsonBody refuses a body that is not declared JSON: a declared other type,
// or a body without any type (a no-cors fetch of a string sends text/plain,
// but a client may send none).
func jsonBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if r.ContentLength != 0 {
			return newError(http.StatusUnsupportedMediaType, "unsupported_media_type",
				"a request body needs Content-Type: application/json (curl: -H 'Content-Type: application/json')")
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		return newError(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"Content-Type %q is not application/json (curl: -H 'Content-Type: application/json')", clip(ct))
	}
	return nil
}

// formBody checks a state-changing page request: a URL-encoded form of at
// most pageBodyLimit bytes. The body is read here, within the cap, so no
// later parser (echo's CSRF lookup, FormValue) can be made to read or spool
// more; a body announced larger is refused before a byte is read.
func formBody(c echo.Context) error {
	r := c.Request()
	if r.ContentLength > pageBodyLimit {
		return newError(http.StatusRequestEntityTooLarge, "too_large", "request body is %d bytes; a form may be %d", r.ContentLength, pageBodyLimit)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/x-www-form-urlencoded" {
			return newError(http.StatusUnsupportedMediaType, "unsupported_media_type", "a form must be sent as application/x-www-form-urlencoded")
		}
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, pageBodyLimit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return newError(http.StatusRequestEntityTooLarge, "too_large", "a form may be %d bytes", pageBodyLimit)
		}
		return newError(http.StatusBadRequest, "invalid_body", "reading the form: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	return nil
}

// ipExtractor names the client of a request: the direct peer, unless it is
// one of the trusted proxies, whose X-Forwarded-For is then believed.
// Without trusted proxies a client cannot choose the address the logs and
// the default worker id show, nor dodge the slow-down of failed logins.
func ipExtractor(trusted []string) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, t := range trusted {
		if n, err := ParseTrustedProxy(t); err == nil { // the config checked them
			opts = append(opts, echo.TrustIPRange(n))
		}
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// hostLabelRE is one label of a host name. An underscore is allowed:
// container and compose service names carry them.
var hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$`)

// ValidateAllowedHost checks one entry of server.allowed_hosts (or
// --allowed-hosts): a host name ("queue.example.com"), an IP address
// ("192.0.2.7", "2001:db8::7", without brackets), "*.example.com" (any
// subdomain of example.com, not example.com itself) or "*" (any host).
// An entry names a host only: the port of a request's Host is not
// compared, so "host:port" is refused with a hint, as are a scheme and a path.
func ValidateAllowedHost(h string) error {
	switch {
	case h == "*":
		return nil
	case h == "":
		return errors.New(`an allowed host is empty (give a host name, an IP address, "*.example.com" or "*")`)
	case strings.Contains(h, "://"):
		return fmt.Errorf("allowed host %q: give the host name alone, without a scheme (%q)", clip(h), clip(h[strings.Index(h, "://")+3:]))
	case strings.ContainsAny(h, "/?#"):
		return fmt.Errorf("allowed host %q: give the host name alone, without a path", clip(h))
	case strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]"):
		return fmt.Errorf("allowed host %q: write an IPv6 address without brackets (%q)", clip(h), clip(h[1:len(h)-1]))
	}
	if net.ParseIP(h) != nil {
		return nil
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		return fmt.Errorf("allowed host %q: give the host without the port (%q); an allowed host is allowed on any port", clip(h), clip(host))
	}
	name := strings.TrimPrefix(h, "*.")
	if len(name) > 253 {
		return fmt.Errorf("allowed host %q is longer than 253 characters", clip(h))
	}
	for _, l := range strings.Split(name, ".") {
		if !hostLabelRE.MatchString(l) {
			return fmt.Errorf("allowed host %q is not a host name, an IP address, \"*.example.com\" or \"*\"", clip(h))
		}
	}
	return nil
}

// ParseTrustedProxy reads one entry of server.trusted_proxies: an IP
// address ("10.0.0.5", the range of that address alone) or a CIDR range
// ("10.0.0.0/8", "fd00::/8"). The config check and ipExtractor both use it,
// so what the check accepts is what the extractor trusts.
func ParseTrustedProxy(p string) (*net.IPNet, error) {
	if ip := net.ParseIP(p); ip != nil {
		bits := 128
		if ip.To4() != nil {
			ip, bits = ip.To4(), 32
		}
		return &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)}, nil
	}
	if _, n, err := net.ParseCIDR(p); err == nil {
		return n, nil
	}
	return nil, fmt.Errorf("trusted proxy %q is not an IP address (10.0.0.5) or a CIDR range (10.0.0.0/8)", clip(p))
}
