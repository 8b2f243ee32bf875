package ui

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

const actorKey = "queue.actor"

// sessionCookie carries the token for the web pages after a login.
const sessionCookie = "queue_session"

// actor is who made the request, for the audit trail: the name of the token
// used, or "local" when the server runs without tokens.
func actor(c echo.Context) string {
	if a, ok := c.Get(actorKey).(string); ok && a != "" {
		return a
	}
	return "local"
}

// auth requires a configured token on every route except the few opened on
// purpose (health and metrics by config; the login page and static files).
func (h *handler) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(h.opts.Tokens) == 0 {
			c.Set(actorKey, "local")
			return next(c)
		}
		if h.public(c.Request().URL.Path) {
			return next(c)
		}
		var given string
		if a := c.Request().Header.Get("Authorization"); a != "" {
			scheme, tok, _ := strings.Cut(a, " ")
			if strings.EqualFold(scheme, "Bearer") {
				given = strings.TrimSpace(tok)
			}
		} else if ck, err := c.Cookie(sessionCookie); err == nil {
			given = ck.Value
		}
		if name, ok := h.tokenName(given); ok {
			c.Set(actorKey, name)
			return next(c)
		}
		if m := c.Request().Method; !isAPI(c) && h.pages != nil && (m == http.MethodGet || m == http.MethodHead) {
			return h.pages.loginRequired(c)
		}
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="queue"`)
		return newError(http.StatusUnauthorized, "unauthorized", "this server needs a token: send Authorization: Bearer <token>")
	}
}

// tokenName finds the token given among the configured ones. Every
// configured token is compared in constant time, so the answer's timing
// tells nothing about how close a guess was.
func (h *handler) tokenName(given string) (string, bool) {
	if given == "" {
		return "", false
	}
	name, found := "", 0
	for _, t := range h.opts.Tokens {
		if subtle.ConstantTimeCompare([]byte(given), []byte(t.Token)) == 1 {
			name, found = t.Name, 1
		}
	}
	return name, found == 1
}

func (h *handler) public(path string) bool {
	switch {
	case path == "/healthz" || path == "/readyz":
		return h.opts.PublicHealth
	case path == "/metrics":
		return h.opts.PublicMetrics
	case path == "/login" || strings.HasPrefix(path, "/static/"):
		return true
	}
	return false
}

// secure sets the headers every answer carries; pages also get a strict
// Content-Security-Policy (no inline script, no framing).
func (h *handler) secure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		hd := c.Response().Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
		if isAPI(c) {
			hd.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}
