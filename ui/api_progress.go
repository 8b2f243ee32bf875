package ui

import "github.com/labstack/echo/v4"

// progressRoutes adds the API routes of this file's feature (issue 26).
func (h *handler) progressRoutes(api *echo.Group) {}
