package ui

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
)

// pages serves the web UI. It is filled in by the UI work; until then the
// API stands alone.
type pages struct{}

func newPages(h *handler, e *echo.Echo) *pages { return nil }

func (p *pages) errorPage(c echo.Context, ae *apiError) {
	c.String(ae.Status, http.StatusText(ae.Status)+": "+ae.Message)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
