package ui

import "github.com/labstack/echo/v4"

// liveJobPages adds the pages of this file's feature (issue 26).
func (p *pages) liveJobPages(e *echo.Echo, page func(string, echo.HandlerFunc), mw []echo.MiddlewareFunc) {}
