package ui

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

func init() {
	queryParams["GET /api/stats/series"] = []string{"queue", "range"}
}

// chartRoutes adds GET /api/stats/series, the numbers of the charts.
func (h *handler) chartRoutes(api *echo.Group) {
	api.GET("/stats/series", scopedQueueParam(h.series))
}

// series is GET /api/stats/series?queue=&range=1h|24h|7d: a queue's (or,
// without queue, every queue's) completed and failed attempts, claims and
// their pickup waits, and queued depth, a point per step of the range (see
// app.Series). A token limited to queues must name one of them (a token
// of one queue gets it by default).
func (h *handler) series(c echo.Context) error {
	s, err := h.svc.Series(c.Request().Context(), c.QueryParam("queue"), c.QueryParam("range"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}
