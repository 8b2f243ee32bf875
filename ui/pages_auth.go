package ui

import (
	"crypto/rand"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// sessionMaxAge is how long a login lasts in the browser.
const sessionMaxAge = 12 * time.Hour

// loginView is the data of login.html.
type loginView struct {
	base
	Next    string
	Error   string
	Warning string // why the browser may drop the session cookie
}

// loginForm is GET /login. Without tokens there is nothing to log in to;
// with a valid session it goes straight on.
func (p *pages) loginForm(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	if len(p.h.opts.Tokens) == 0 {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if ck, err := c.Cookie(sessionCookie); err == nil {
		if who := p.h.sessions.verify(ck.Value, time.Now()); who != nil && !who.restricted() {
			return c.Redirect(http.StatusSeeOther, next)
		}
	}
	v := loginView{base: p.base(c, "Log in", "login"), Next: next, Warning: p.plainHTTPWarning(c)}
	v.Bare = true
	return p.render(c, http.StatusOK, "login", v)
}

// login is POST /login: a valid token starts a session, whose signed id
// (not the token) becomes the queue_session cookie (HttpOnly, Secure,
// SameSite=Strict); the CSRF cookie is renewed so a token planted before
// the login is worthless after it.
func (p *pages) login(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	if len(p.h.opts.Tokens) == 0 {
		return c.Redirect(http.StatusSeeOther, next)
	}
	ip := c.RealIP()
	if wait := p.h.failures.blocked(ip, time.Now()); wait > 0 {
		return p.loginError(c, http.StatusTooManyRequests, next, "Too many failed attempts from this address; wait a minute and try again.")
	}
	t, ok := p.h.token(c.FormValue("token"))
	if !ok {
		p.h.authFailed(c, ip, true, "login")
		return p.loginError(c, http.StatusUnauthorized, next, "That token is not valid for this server.")
	}
	if len(t.Queues) > 0 {
		return p.loginError(c, http.StatusForbidden, next, "That token is limited to some queues; the web UI needs a token without a queue list.")
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: p.h.sessions.issue(t, time.Now()), Path: "/", MaxAge: int(sessionMaxAge.Seconds()),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	p.renewCSRF(c)
	p.log.Info().Str("actor", t.Name).Str("remote", ip).Msg("ui login")
	return c.Redirect(http.StatusSeeOther, next)
}

func (p *pages) loginError(c echo.Context, status int, next, msg string) error {
	v := loginView{base: p.base(c, "Log in", "login"), Next: next, Error: msg, Warning: p.plainHTTPWarning(c)}
	v.Bare = true
	return p.render(c, status, "login", v)
}

// renewCSRF replaces the CSRF cookie echo's middleware set on this answer
// with a fresh token.
func (p *pages) renewCSRF(c echo.Context) {
	hd := c.Response().Header()
	kept := hd.Values("Set-Cookie")[:0:0]
	for _, v := range hd.Values("Set-Cookie") {
		if !strings.HasPrefix(v, csrfCookie+"=") {
			kept = append(kept, v)
		}
	}
	hd.Del("Set-Cookie")
	for _, v := range kept {
		hd.Add("Set-Cookie", v)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	c.SetCookie(&http.Cookie{Name: csrfCookie, Value: base64.RawURLEncoding.EncodeToString(b[:]), Path: "/", MaxAge: 7 * 24 * 3600,
		HttpOnly: true, Secure: c.Scheme() == "https", SameSite: http.SameSiteStrictMode})
}

// logout is POST /logout: the session is revoked and its cookie cleared.
func (p *pages) logout(c echo.Context) error {
	if ck, err := c.Cookie(sessionCookie); err == nil {
		p.h.sessions.revoke(ck.Value, time.Now())
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	if len(p.h.opts.Tokens) == 0 {
		return c.Redirect(http.StatusSeeOther, "/")
	}
	p.setFlash(c, flash{Text: "Logged out."})
	return c.Redirect(http.StatusSeeOther, "/login")
}

// plainHTTPWarning explains, on a page served over plain HTTP to a host
// other than this machine, that browsers drop the Secure session cookie.
func (p *pages) plainHTTPWarning(c echo.Context) string {
	if c.Scheme() == "https" {
		return ""
	}
	host := c.Request().Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); host == "localhost" || strings.HasSuffix(host, ".localhost") || (ip != nil && ip.IsLoopback()) {
		return ""
	}
	return "This page came over plain HTTP from another machine: browsers keep the login cookie (Secure) only over HTTPS. Serve the UI through HTTPS (a reverse proxy), or reach it through an SSH tunnel to 127.0.0.1."
}

// safeNext keeps a redirect target on this server; anything else is "/".
func safeNext(next string) string {
	if next == "" || !localPath(next) || next == "/login" {
		return "/"
	}
	return next
}

// loginRequired answers a page request without a valid session: 401, with
// the login form in the body (so every route without a token is a 401, and
// a person still sees where to log in), coming back to the page afterwards.
func (p *pages) loginRequired(c echo.Context) error {
	form := func(c echo.Context) error {
		v := loginView{base: p.base(c, "Log in", "login"), Next: safeNext(c.Request().URL.RequestURI()), Warning: p.plainHTTPWarning(c)}
		v.Bare = true
		return p.render(c, http.StatusUnauthorized, "login", v)
	}
	return p.start(p.guard(form))(c) // the page middleware: the form needs its CSRF token
}
