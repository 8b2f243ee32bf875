package ui

import (
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
		if _, ok := p.h.tokenName(ck.Value); ok {
			return c.Redirect(http.StatusSeeOther, next)
		}
	}
	v := loginView{base: p.base(c, "Log in", "login"), Next: next, Warning: p.plainHTTPWarning(c)}
	v.Bare = true
	return p.render(c, http.StatusOK, "login", v)
}

// login is POST /login: a valid token becomes the queue_session cookie
// (HttpOnly, Secure, SameSite=Strict), which auth accepts like a bearer token.
func (p *pages) login(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	if len(p.h.opts.Tokens) == 0 {
		return c.Redirect(http.StatusSeeOther, next)
	}
	tok := c.FormValue("token")
	name, ok := p.h.tokenName(tok)
	if !ok {
		p.log.Warn().Str("remote", c.RealIP()).Msg("ui login refused")
		v := loginView{base: p.base(c, "Log in", "login"), Next: next, Error: "That token is not valid for this server.",
			Warning: p.plainHTTPWarning(c)}
		v.Bare = true
		return p.render(c, http.StatusUnauthorized, "login", v)
	}
	c.SetCookie(&http.Cookie{Name: sessionCookie, Value: tok, Path: "/", MaxAge: int(sessionMaxAge.Seconds()),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	p.log.Info().Str("actor", name).Msg("ui login")
	return c.Redirect(http.StatusSeeOther, next)
}

// logout is POST /logout: the session cookie is cleared.
func (p *pages) logout(c echo.Context) error {
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
