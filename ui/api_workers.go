package ui

import "github.com/labstack/echo/v4"

// workerRoutes adds the API routes of this file's feature (issue 26).
func (h *handler) workerRoutes(api *echo.Group) {}
