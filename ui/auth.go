package ui

import (
	"cmp"
	"crypto/subtle"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

const principalKey = "queue.principal"

// Token is an API token the server accepts and what it may do. Package
// commands reads them from [[tokens]] of the config file and --token.
type Token struct {
	Name   string // shown in the audit trail and the pages
	Secret string // what a client sends as its bearer token
	// Role is what the token may do; empty: admin.
	Role Role
	// Queues, if set, are the only queues the token may touch.
	Queues []string
}

// Role is what a token may do. Each role includes the ones before it:
// read < submit < work < admin.
type Role string

// The roles, weakest first.
const (
	RoleRead   Role = "read"   // list and show jobs, the DLQ, queues, stats, events
	RoleSubmit Role = "submit" // and submit jobs
	RoleWork   Role = "work"   // and claim, heartbeat, complete, fail, snooze, once
	RoleAdmin  Role = "admin"  // and cancel, pause, resume, drain, every DLQ action
)

// roleRank orders the roles; an unknown role ranks 0 (nothing).
var roleRank = map[Role]int{RoleRead: 1, RoleSubmit: 2, RoleWork: 3, RoleAdmin: 4}

// Allows reports whether role r includes need. The empty role is admin
// (a token configured without one, as before roles existed).
func (r Role) Allows(need Role) bool {
	if r == "" {
		r = RoleAdmin
	}
	return roleRank[r] >= roleRank[need] && roleRank[need] > 0
}

// Valid reports whether r is one of the roles (or empty: admin).
func (r Role) Valid() bool { return r == "" || roleRank[r] > 0 }

// sessionCookie carries a signed session of the web pages after a login
// (never the token itself; see sessions).
const sessionCookie = "queue_session"

// principal is who made a request and what it may do: the token's name,
// role and queues, or "local" (admin of everything) without tokens.
type principal struct {
	name    string
	role    Role
	queues  []string // empty: every queue
	session bool     // it came with the session cookie, not a bearer token
}

var localPrincipal = &principal{name: "local", role: RoleAdmin}

func (p *principal) allows(need Role) bool { return need == "" || p.role.Allows(need) }

func (p *principal) allowsQueue(q string) bool {
	return len(p.queues) == 0 || slices.Contains(p.queues, q)
}

func (p *principal) restricted() bool { return len(p.queues) > 0 }

func who(c echo.Context) *principal {
	if p, ok := c.Get(principalKey).(*principal); ok {
		return p
	}
	return localPrincipal
}

// actor is who made the request, for the audit trail: the name of the token
// used, or "local" when the server runs without tokens.
func actor(c echo.Context) string { return who(c).name }

// auth finds who is asking and whether they may: a bearer token, or the
// session cookie of the pages (on the API only together with the CSRF
// header, so no other page can borrow it); then the route's role. Routes
// opened on purpose (health unless PrivateHealth, metrics with
// PublicMetrics; the login page and static files) need nothing.
func (h *handler) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(h.opts.Tokens) == 0 {
			return next(c) // who(c) is localPrincipal: nothing set, no map made per request
		}
		if h.public(c.Request().URL.Path) {
			return next(c)
		}
		r := c.Request()
		ip := c.RealIP()
		if wait := h.failures.blocked(ip, time.Now()); wait > 0 {
			c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+0.999)))
			return newError(http.StatusTooManyRequests, "too_many_requests", "too many failed attempts from this address; wait %s", wait.Round(time.Second))
		}
		var p *principal
		given := false
		if a := r.Header.Get("Authorization"); a != "" {
			given = true
			scheme, tok, _ := strings.Cut(a, " ")
			if strings.EqualFold(scheme, "Bearer") {
				p = h.tokenPrincipal(strings.TrimSpace(tok))
			}
		} else if ck, err := c.Cookie(sessionCookie); err == nil && ck.Value != "" {
			given = true
			if p = h.sessions.verify(ck.Value, time.Now()); p != nil && isAPI(c) && !safeMethod(r.Method) && !csrfHeaderOK(c) {
				return newError(http.StatusForbidden, "forbidden", "the session cookie works on the API only with the X-CSRF-Token header of the pages; scripts send Authorization: Bearer <token>")
			}
		}
		if p == nil {
			h.authFailed(c, ip, given, "token")
			if m := r.Method; !isAPI(c) && h.pages != nil && (m == http.MethodGet || m == http.MethodHead) {
				return h.pages.loginRequired(c)
			}
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="queue"`)
			switch {
			case r.Header.Get("Authorization") != "":
				return newError(http.StatusUnauthorized, "unauthorized", "the token sent is not one this server accepts: check it (Authorization: Bearer <token>)")
			case given:
				return newError(http.StatusUnauthorized, "unauthorized", "the session has expired or is not valid: log in again, or send Authorization: Bearer <token>")
			}
			return newError(http.StatusUnauthorized, "unauthorized", "this server needs a token: send Authorization: Bearer <token>")
		}
		c.Set(principalKey, p)
		if !isAPI(c) && p.restricted() && c.Path() != "/logout" {
			return denied("token %q is limited to queues %s; the web UI needs a token without a queue list", p.name, strings.Join(p.queues, ", "))
		}
		if need := routeRole(c); !p.allows(need) {
			return forbidden(p, need)
		}
		return next(c)
	}
}

// auditDenied records a request a named token was refused (its role or
// queues did not cover it) in the audit trail, at most once a second per
// token, so a token that may only read cannot fill the trail.
func (h *handler) auditDenied(c echo.Context) {
	p := who(c)
	if p == localPrincipal || len(h.opts.Tokens) == 0 {
		return
	}
	now := time.Now()
	h.deniedMu.Lock()
	if h.denied == nil {
		h.denied = map[string]time.Time{}
	}
	last, seen := h.denied[p.name]
	if seen && now.Sub(last) < time.Second {
		h.deniedMu.Unlock()
		return
	}
	h.denied[p.name] = now
	h.deniedMu.Unlock()
	target := c.Request().Method + " " + c.Request().URL.Path
	if err := h.svc.RecordDenied(c.Request().Context(), p.name, app.TruncateString(target, 200)); err != nil {
		h.log.Warn().Err(err).Str("actor", p.name).Msg("audit of a denied request")
	}
}

// denial is a request refused for its token's role or queues: a 403
// forbidden that the error handler also writes to the audit trail.
type denial struct{ *apiError }

func (d *denial) Unwrap() error { return d.apiError }

func denied(format string, args ...any) error {
	return &denial{newError(http.StatusForbidden, "forbidden", format, args...)}
}

// forbidden answers a request the token's role does not cover, naming the missing scope.
func forbidden(p *principal, need Role) error {
	return denied("token %q has role %s; this needs role %s", p.name, p.role, need)
}

// authFailed counts a refused credential: in /metrics, and per address for
// the slow-down (only when a credential was given, so a person opening the
// UI before logging in is not counted against).
func (h *handler) authFailed(c echo.Context, ip string, given bool, reason string) {
	if h.opts.AuthFailed != nil {
		h.opts.AuthFailed(reason)
	}
	if !given {
		return
	}
	switch n := h.failures.add(ip, time.Now()); {
	case n == 1:
		h.log.Warn().Str("remote", ip).Str("path", c.Request().URL.Path).Str("reason", reason).Msg("credential refused")
	case n == cmp.Or(h.failures.limit, failLimit):
		h.log.Warn().Str("remote", ip).Dur("for", failWindow).Msg("too many refused credentials: address slowed down")
	}
}

// csrfHeaderOK reports whether the X-CSRF-Token header matches the pages'
// CSRF cookie, which only this server's pages can read.
func csrfHeaderOK(c echo.Context) bool {
	ck, err := c.Cookie(csrfCookie)
	hd := c.Request().Header.Get("X-CSRF-Token")
	return err == nil && ck.Value != "" && hd != "" && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(hd)) == 1
}

// tokenPrincipal finds the token given among the configured ones. Every
// configured token is compared in constant time, so the answer's timing
// tells nothing about how close a guess was.
func (h *handler) tokenPrincipal(given string) *principal {
	t, ok := h.token(given)
	if !ok {
		return nil
	}
	return tokenPrincipal(t)
}

func tokenPrincipal(t Token) *principal {
	role := t.Role
	if role == "" {
		role = RoleAdmin
	}
	return &principal{name: t.Name, role: role, queues: t.Queues}
}

func (h *handler) token(given string) (Token, bool) {
	if given == "" {
		return Token{}, false
	}
	var found Token
	n := 0
	for _, t := range h.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(given), []byte(t.Secret)) == 1 {
			found, n = t, 1
		}
	}
	return found, n == 1
}

// public reports whether path answers without a token when tokens are set.
func (h *handler) public(path string) bool {
	switch {
	case path == "/healthz" || path == "/readyz":
		return !h.opts.PrivateHealth
	case path == "/metrics":
		return h.opts.PublicMetrics
	case path == "/login" || strings.HasPrefix(path, "/static/"):
		return true
	}
	return false
}

// routeRoles names the role each state-changing route needs. Reading (GET,
// HEAD) needs read; a state-changing route missing here needs admin, so a
// new route is closed until someone decides otherwise.
var routeRoles = map[string]Role{
	"POST /api/jobs":                RoleSubmit,
	"POST /api/jobs/batch":          RoleSubmit,
	"POST /api/workflows":           RoleSubmit,
	"POST /api/queues/:queue/claim": RoleWork,
	"POST /api/claim":               RoleWork,
	"POST /api/jobs/complete":       RoleWork,
	"POST /api/jobs/:id/heartbeat":  RoleWork,
	"POST /api/jobs/:id/complete":   RoleWork,
	"POST /api/jobs/:id/fail":       RoleWork,
	"POST /api/jobs/:id/snooze":     RoleWork,
	"POST /api/jobs/:id/progress":   RoleWork,
	"POST /api/jobs/:id/log":        RoleWork,
	"POST /api/jobs/:id/cancel":     RoleWork, // without a lease the handler asks for admin
	"POST /api/once/:key":           RoleWork,
	"POST /api/once/:key/done":      RoleWork,
	"POST /logout":                  "",
	// The worker registry (api_workers.go): workers register and heartbeat.
	"POST /api/workers":               RoleWork,
	"POST /api/workers/:id/heartbeat": RoleWork,
	// Pages that only ask to confirm an admin action.
	"GET /dlq/confirm":           RoleAdmin,
	"HEAD /dlq/confirm":          RoleAdmin,
	"GET /jobs/confirm":          RoleAdmin,
	"HEAD /jobs/confirm":         RoleAdmin,
	"GET /queues/drain":          RoleAdmin,
	"HEAD /queues/drain":         RoleAdmin,
	"GET /workflows/:id/cancel":  RoleAdmin,
	"HEAD /workflows/:id/cancel": RoleAdmin,
	"GET /workers/confirm":       RoleAdmin,
	"HEAD /workers/confirm":      RoleAdmin,
}

func routeRole(c echo.Context) Role {
	m := c.Request().Method
	if r, ok := routeRoles[m+" "+c.Path()]; ok {
		return r
	}
	if safeMethod(m) {
		return RoleRead
	}
	return RoleAdmin
}

// failures slows down guessing: an address with failLimit refused
// credentials within failWindow is answered 429 until the window passes.
// The table is bounded (failMaxAddrs); when full, it starts over, which
// at worst forgives some guessers early.
type failures struct {
	limit int // 0: failLimit; negative: none
	mu    sync.Mutex
	m     map[string]*failCount
}

type failCount struct {
	n     int
	start time.Time
}

const (
	failLimit    = 20
	failWindow   = time.Minute
	failMaxAddrs = 10000
)

// add counts a failure of ip and returns the count in the current window.
func (f *failures) add(ip string, now time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil || len(f.m) >= failMaxAddrs {
		f.m = map[string]*failCount{}
	}
	fc := f.m[ip]
	if fc == nil || now.Sub(fc.start) > failWindow {
		fc = &failCount{start: now}
		f.m[ip] = fc
	}
	fc.n++
	return fc.n
}

// blocked returns how long ip must still wait, or 0.
func (f *failures) blocked(ip string, now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	fc := f.m[ip]
	if fc == nil {
		return 0
	}
	left := failWindow - now.Sub(fc.start)
	if left <= 0 {
		delete(f.m, ip)
		return 0
	}
	if f.limit < 0 || fc.n < cmp.Or(f.limit, failLimit) {
		return 0
	}
	return left
}

// secure sets the headers every answer carries; pages also get a strict
// Content-Security-Policy (no inline script, no framing).
func (h *handler) secure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		hd := c.Response().Header()
		for _, h := range secureHeaders {
			hd[h.name] = h.value
		}
		if isAPI(c) {
			hd["Cache-Control"] = noStore
		}
		return next(c)
	}
}

// secureHeaders are the headers secure sets, built once: each request's
// header map takes these slices as they are (their length is their
// capacity, so an Add copies rather than writes into them), which spares
// a canonicalisation and an allocation per header and request.
var secureHeaders = []struct {
	name  string
	value []string
}{
	{"X-Content-Type-Options", []string{"nosniff"}},
	{"Referrer-Policy", []string{"no-referrer"}},
	{"X-Frame-Options", []string{"DENY"}},
	{"Content-Security-Policy", []string{"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"}},
}

var noStore = []string{"no-store"}
