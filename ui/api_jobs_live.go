package ui

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// liveJobRoutes adds the bulk actions on live jobs (issue 26): POST
// /api/jobs/cancel, /retry, /reschedule and /prioritize, each for the jobs
// a filter of GET /api/jobs finds. They are admin routes (routeRoles has
// none of them), audited as jobs.<action>.
func (h *handler) liveJobRoutes(api *echo.Group) {
	for _, action := range app.LiveActions {
		api.POST("/jobs/"+action, h.liveBulk(action))
	}
}

// liveBulk is POST /api/jobs/{action}. A token limited to some queues must
// name one of them in "queue", as for the DLQ's bulk actions.
func (h *handler) liveBulk(action string) echo.HandlerFunc {
	return func(c echo.Context) error {
		var in app.LiveBulkInput
		if err := bind(c, &in, smallBody, false); err != nil {
			return err
		}
		if p := who(c); p.restricted() && in.Queue == "" {
			return denied("token %q is limited to queues %s: name one with \"queue\"", p.name, strings.Join(p.queues, ", "))
		}
		if err := checkQueue(c, in.Queue); err != nil && in.Queue != "" {
			return err
		}
		res, err := h.svc.BulkLive(c.Request().Context(), action, in, actor(c))
		if err != nil {
			if res != nil && res.Changed > 0 {
				h.log.Error().Err(err).Str("action", action).Int("count", res.Changed).Msg("bulk action stopped")
			}
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
}
