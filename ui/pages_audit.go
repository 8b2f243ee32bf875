package ui

import "github.com/labstack/echo/v4"

// auditPages adds the audit trail's page (issue 28).
func (p *pages) auditPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {
}
