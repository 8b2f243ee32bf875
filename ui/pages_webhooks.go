package ui

import "github.com/labstack/echo/v4"

// webhookPages adds the webhook pages (issue 27).
func (p *pages) webhookPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
}
