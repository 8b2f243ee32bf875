package ui

import "github.com/labstack/echo/v4"

// settingsRoutes adds the API routes of this file's feature (issue 26).
func (h *handler) settingsRoutes(api *echo.Group) {}
