package ui

import "github.com/labstack/echo/v4"

// liveJobRoutes adds the API routes of this file's feature (issue 26).
func (h *handler) liveJobRoutes(api *echo.Group) {}
