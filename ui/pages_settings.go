package ui

import "github.com/labstack/echo/v4"

// settingsPages adds the pages of this file's feature (issue 26).
func (p *pages) settingsPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {}
