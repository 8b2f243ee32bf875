package ui

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	assets "github.com/queuehq/queue/embed"
)

// pages serves the web UI: server-rendered html/template pages that call
// app.Service directly (never the HTTP API). Every action is a plain form
// answered with a redirect (POST-redirect-GET), so nothing needs
// JavaScript; static/app.js only adds live refresh and "select all".
// Templates, CSS and the script are embedded (package assets).
type pages struct {
	h   *handler
	svc *app.Service
	log zerolog.Logger
	// tmpl holds the page templates parsed so far: each is parsed on its
	// first use (see template), under tmplMu.
	tmpl   map[string]*template.Template
	tmplMu sync.Mutex
	static map[string]staticFile
	// csrf and csrfTLS are echo's CSRF middleware for plain HTTP and for
	// HTTPS (the latter marks its cookie Secure).
	csrf, csrfTLS echo.MiddlewareFunc
}

// staticFile is one embedded file under /static/.
type staticFile struct {
	body  []byte
	ctype string
	hash  string // first hex digits of its SHA-256, for cache-busting URLs
}

// Names of the cookies the pages set besides the session.
const (
	csrfCookie  = "queue_csrf"
	flashCookie = "queue_flash"
	csrfField   = "_csrf"
	startKey    = "queue.page_start"
)

// errCSRF answers a state-changing page request that fails the CSRF checks.
var errCSRF = newError(http.StatusForbidden, "forbidden", "this form's security token is missing or stale, or the request came from another site: reload the page and try again")

func newPages(h *handler, e *echo.Echo) *pages {
	p := &pages{h: h, svc: h.svc, log: h.log, tmpl: map[string]*template.Template{}, static: map[string]staticFile{}}
	p.loadStatic()
	csrf := func(secure bool) echo.MiddlewareFunc {
		return middleware.CSRFWithConfig(middleware.CSRFConfig{
			TokenLookup:    "form:" + csrfField + ",header:X-CSRF-Token",
			ContextKey:     "csrf",
			CookieName:     csrfCookie,
			CookiePath:     "/",
			CookieMaxAge:   7 * 24 * 3600,
			CookieHTTPOnly: true,
			CookieSecure:   secure,
			CookieSameSite: http.SameSiteStrictMode,
			ErrorHandler:   func(error, echo.Context) error { return errCSRF },
		})
	}
	p.csrf, p.csrfTLS = csrf(false), csrf(true)

	mw := []echo.MiddlewareFunc{p.start, p.guard}
	page := func(path string, h echo.HandlerFunc) { // GET, and HEAD for monitors
		e.Match([]string{http.MethodGet, http.MethodHead}, path, h, mw...)
	}
	page("/", p.dashboard)
	page("/jobs", p.jobs)
	page("/jobs/:id", p.job)
	e.POST("/jobs/:id/cancel", p.cancel, mw...)
	e.POST("/jobs/:id/move", p.move, mw...)
	page("/dlq", p.deadList)
	page("/dlq/confirm", p.deadConfirm)
	page("/dlq/export", p.deadExport)
	e.POST("/dlq/bulk", p.deadBulk, mw...)
	page("/dlq/:id", p.dead)
	e.POST("/dlq/:id/replay", p.deadReplay, mw...)
	page("/workflows", p.workflows)
	page("/workflows/:id", p.workflow)
	page("/workflows/:id/cancel", p.workflowCancelConfirm)
	e.POST("/workflows/:id/cancel", p.workflowCancel, mw...)
	page("/queues", p.queues)
	e.POST("/queues/pause", p.pause, mw...)
	e.POST("/queues/resume", p.resume, mw...)
	page("/queues/drain", p.drainConfirm)
	page("/queues/keys", p.queueKeys)
	e.POST("/queues/drain", p.drain, mw...)
	// Live operations (issue 26), one file each.
	p.progressPages(e, page, mw)
	p.workerPages(e, page, mw)
	p.settingsPages(e, page, mw)
	p.webhookPages(e, page, mw)
	p.liveJobPages(e, page, mw)
	p.chartPages(e, page, mw)
	// The operations console (issue 28).
	p.auditPages(e, page, mw)
	page("/login", p.loginForm)
	e.POST("/login", p.login, mw...)
	e.POST("/logout", p.logout, mw...)
	e.GET("/static/*", p.serveStatic)
	return p
}

func (p *pages) loadStatic() {
	err := fs.WalkDir(assets.Static, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets.Static, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) { // not left to the system's mime tables
		case ".css":
			ct = "text/css; charset=utf-8"
		case ".js":
			ct = "text/javascript; charset=utf-8"
		case ".svg":
			ct = "image/svg+xml"
		}
		p.static[name] = staticFile{body: b, ctype: ct, hash: hex.EncodeToString(sum[:])[:12]}
		return nil
	})
	if err != nil {
		panic(fmt.Sprintf("ui: static files: %v", err)) // embedded, so a build mistake
	}
}

// template is page name's template: the page file parsed together with
// layout.html and partials.html (a page file defines "content"), on its
// first use. Parsing every page at start would hold a parsed copy of the
// layout for each of the pages an idle server never shows (about a MB of
// its resident memory); the tests parse them all (TestTemplatesParse).
func (p *pages) template(name string) (*template.Template, error) {
	p.tmplMu.Lock()
	defer p.tmplMu.Unlock()
	if t := p.tmpl[name]; t != nil {
		return t, nil
	}
	file := name + ".html"
	if name == "layout" || name == "partials" {
		return nil, fmt.Errorf("no page template %q", name)
	}
	if _, err := fs.Stat(assets.Templates, file); err != nil {
		return nil, fmt.Errorf("no page template %q", name)
	}
	t, err := template.New(file).Funcs(p.funcs()).ParseFS(assets.Templates, "layout.html", "partials.html", file)
	if err != nil {
		return nil, fmt.Errorf("parse page template %s: %w", file, err)
	}
	p.tmpl[name] = t
	return t, nil
}

// pageNames names every page template (each *.html but the layout and
// the partials).
func pageNames() ([]string, error) {
	files, err := fs.Glob(assets.Templates, "*.html")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range files {
		if f != "layout.html" && f != "partials.html" {
			names = append(names, strings.TrimSuffix(f, ".html"))
		}
	}
	return names, nil
}

// serveStatic serves the embedded files. A URL carrying the file's hash
// (as the templates write it) may be cached for good.
func (p *pages) serveStatic(c echo.Context) error {
	f, ok := p.static[c.Param("*")]
	if !ok {
		return echo.ErrNotFound
	}
	hd := c.Response().Header()
	if c.QueryParam("v") == f.hash {
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Set("ETag", `"`+f.hash+`"`)
	if c.Request().Header.Get("If-None-Match") == `"`+f.hash+`"` {
		return c.NoContent(http.StatusNotModified)
	}
	return c.Blob(http.StatusOK, f.ctype, f.body)
}

// start notes when a page request began, for its Server-Timing header.
func (p *pages) start(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(startKey, time.Now())
		return next(c)
	}
}

// guard is the CSRF protection of every page route, behind browserGuard
// (which already refused requests another site's page sent): echo's CSRF
// middleware demands the token of the form's hidden field to match the
// queue_csrf cookie (SameSite=Strict, HttpOnly). Sec-Fetch-Site is taken
// out first, since echo's middleware would otherwise accept a same-origin
// request without looking at the token.
func (p *pages) guard(next echo.HandlerFunc) echo.HandlerFunc {
	plain, tls := p.csrf(next), p.csrfTLS(next)
	return func(c echo.Context) error {
		c.Request().Header.Del("Sec-Fetch-Site")
		if c.Scheme() == "https" {
			return tls(c)
		}
		return plain(c)
	}
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions || m == http.MethodTrace
}

// base is what every page's layout shows.
type base struct {
	Title   string
	Nav     string // the active navigation entry
	CSRF    string // the token of this page's forms
	Actor   string // who is logged in ("local" without tokens)
	Login   bool   // tokens are configured: offer to log out
	Admin   bool   // the token may act (cancel, replay, purge, pause, drain): show those forms
	Bare    bool   // no navigation (the login page)
	Flash   *flash
	Version string
	Refresh int // seconds between live refreshes by app.js; 0: none
	Now     time.Time
}

func (p *pages) base(c echo.Context, title, nav string) base {
	b := base{Title: title, Nav: nav, Actor: actor(c), Login: len(p.h.opts.Tokens) > 0, Admin: who(c).allows(RoleAdmin),
		Version: p.h.opts.Version, Now: p.h.opts.Now().UTC()}
	if tok, ok := c.Get("csrf").(string); ok {
		b.CSRF = tok
	}
	b.Flash = p.takeFlash(c)
	return b
}

// render writes page name with data: into a buffer first, so a template
// error is a clean error page rather than half a page.
func (p *pages) render(c echo.Context, status int, name string, data any) error {
	t, err := p.template(name)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	hd := c.Response().Header()
	hd.Set("Cache-Control", "no-store")
	if t0, ok := c.Get(startKey).(time.Time); ok {
		hd.Set("Server-Timing", fmt.Sprintf("app;desc=\"render\";dur=%.1f", float64(time.Since(t0).Microseconds())/1000))
	}
	if c.Request().Method == http.MethodHead {
		return c.NoContent(status)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// errorView is the data of error.html.
type errorView struct {
	base
	Status  int
	Text    string
	Message string
}

// errorPage answers a failed page request with an HTML page (the API
// answers JSON; see errorHandler).
func (p *pages) errorPage(c echo.Context, ae *apiError) {
	v := errorView{base: base{Title: http.StatusText(ae.Status), Actor: actor(c), Login: len(p.h.opts.Tokens) > 0,
		Version: p.h.opts.Version, Now: p.h.opts.Now().UTC()},
		Status: ae.Status, Text: http.StatusText(ae.Status), Message: ae.Message}
	if tok, ok := c.Get("csrf").(string); ok {
		v.CSRF = tok
	}
	if ae.Status == http.StatusUnauthorized {
		v.Message = "You are not logged in, or your session has ended. Log in with a token and try again."
	}
	var buf bytes.Buffer
	t, err := p.template("error")
	if err == nil {
		err = t.ExecuteTemplate(&buf, "layout", v)
	}
	if err != nil {
		p.log.Error().Err(err).Msg("render error page")
		c.String(ae.Status, http.StatusText(ae.Status)+": "+ae.Message)
		return
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	if c.Request().Method == http.MethodHead {
		c.NoContent(ae.Status)
		return
	}
	c.HTMLBlob(ae.Status, buf.Bytes())
}

// flash is a one-time message shown on the page an action redirects to.
type flash struct {
	Kind string `json:"k"` // "ok" or "error"
	Text string `json:"t"`
	Href string `json:"h,omitempty"` // a local link to follow up, if any
	Link string `json:"l,omitempty"` // its text
}

// setFlash stores f in a short-lived cookie for the next page.
func (p *pages) setFlash(c echo.Context, f flash) {
	f.Text = app.TruncateString(f.Text, 600)
	b, _ := json.Marshal(f)
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: base64.RawURLEncoding.EncodeToString(b), Path: "/",
		MaxAge: 60, HttpOnly: true, Secure: c.Scheme() == "https", SameSite: http.SameSiteStrictMode})
}

// takeFlash reads and clears the flash cookie.
func (p *pages) takeFlash(c echo.Context) *flash {
	ck, err := c.Cookie(flashCookie)
	if err != nil || ck.Value == "" {
		return nil
	}
	c.SetCookie(&http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: c.Scheme() == "https", SameSite: http.SameSiteStrictMode})
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil {
		return nil
	}
	var f flash
	if json.Unmarshal(b, &f) != nil || f.Text == "" || !localPath(f.Href) && f.Href != "" {
		return nil
	}
	if f.Kind != "error" {
		f.Kind = "ok"
	}
	return &f
}

// done redirects (303) to back after an action, with a message.
func (p *pages) done(c echo.Context, back string, f flash) error {
	p.setFlash(c, f)
	return c.Redirect(http.StatusSeeOther, back)
}

// actionErr turns the error of an action into a message on the page it
// returns to when a person can act on it (invalid input, a conflict, not
// found); anything else is an error page (and logged).
func (p *pages) actionErr(c echo.Context, err error, back string) error {
	ae, known := toAPIError(err)
	if !known || ae.Status >= 500 {
		return err
	}
	return p.done(c, back, flash{Kind: "error", Text: ae.Message})
}

// localPath reports whether s is a path on this server (not //host or a URL),
// so redirects to it cannot leave the site.
func localPath(s string) bool {
	if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/\\") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme == "" && u.Host == "" && !strings.ContainsAny(s, "\r\n")
}

// link builds path?k=v&... from pairs, leaving out empty values.
func link(p string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Add(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return p
	}
	return p + "?" + q.Encode()
}
