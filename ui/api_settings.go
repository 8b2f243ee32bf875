package ui

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// settingsRoutes adds the routes of runtime settings (issue 26): a queue's
// settings, and the periodic jobs made, changed, paused, resumed, run and
// deleted through the API. Every route that changes state needs admin
// (the default of routeRoles) and is audited by the Service.
func (h *handler) settingsRoutes(api *echo.Group) {
	api.GET("/queues/:queue/settings", h.queueSettings)
	api.PATCH("/queues/:queue/settings", h.patchQueueSettings)
	api.DELETE("/queues/:queue/settings", h.resetQueueSettings)
	api.POST("/periodic", h.createPeriodic)
	api.GET("/periodic/:name", h.getPeriodic)
	api.PUT("/periodic/:name", h.updatePeriodic)
	api.DELETE("/periodic/:name", h.deletePeriodic)
	api.POST("/periodic/:name/pause", h.pausePeriodic)
	api.POST("/periodic/:name/resume", h.resumePeriodic)
	api.POST("/periodic/:name/run", h.runPeriodic)
}

func (h *handler) queueSettings(c echo.Context) error {
	q := c.Param("queue")
	if err := checkQueue(c, q); err != nil {
		return err
	}
	v, err := h.svc.QueueSettings(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// patchQueueSettings takes {"concurrency": 3, "retention": "48h", "rate": null, ...}.
func (h *handler) patchQueueSettings(c echo.Context) error {
	q := c.Param("queue")
	if err := checkQueue(c, q); err != nil {
		return err
	}
	var patch map[string]json.RawMessage
	if err := bind(c, &patch, smallBody, false); err != nil {
		return err
	}
	if patch == nil {
		return app.Invalid("settings", "give the settings as a JSON object, e.g. {\"concurrency\": 3}")
	}
	v, err := h.svc.PatchQueueSettings(c.Request().Context(), q, patch, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (h *handler) resetQueueSettings(c echo.Context) error {
	q := c.Param("queue")
	if err := checkQueue(c, q); err != nil {
		return err
	}
	v, err := h.svc.ResetQueueSettings(c.Request().Context(), q, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// periodicName is the entry named in the path (a file's entry may have
// slashes and spaces in its name: "default/report/@every 1m", sent escaped).
func periodicName(c echo.Context) string {
	n := c.Param("name")
	if u, err := url.PathUnescape(n); err == nil {
		n = u
	}
	return n
}

// periodicErr answers the errors of the periodic routes that are theirs.
func periodicErr(err error) error {
	switch {
	case errors.Is(err, app.ErrPeriodicInConfig):
		return newError(http.StatusConflict, "periodic_in_config", "%s", message(err))
	case errors.Is(err, app.ErrPeriodicExists):
		return newError(http.StatusConflict, "periodic_exists", "%s", message(err))
	}
	return err
}

// periodicInScope refuses the entry called name to a token whose queues
// do not hold its queue; an unknown name is 404.
func (h *handler) periodicInScope(c echo.Context, name string) (*app.PeriodicStatus, error) {
	st, err := h.svc.GetPeriodic(c.Request().Context(), name)
	if err != nil {
		return nil, err
	}
	return st, checkQueue(c, st.Queue)
}

func (h *handler) getPeriodic(c echo.Context) error {
	st, err := h.periodicInScope(c, periodicName(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}

func (h *handler) createPeriodic(c echo.Context) error {
	var in app.PeriodicInput
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	if err := checkQueue(c, in.Queue); err != nil {
		return err
	}
	st, err := h.svc.CreatePeriodic(c.Request().Context(), in, actor(c))
	if err != nil {
		return periodicErr(err)
	}
	return c.JSON(http.StatusCreated, st)
}

func (h *handler) updatePeriodic(c echo.Context) error {
	name := periodicName(c)
	var in app.PeriodicInput
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	if _, err := h.periodicInScope(c, name); err != nil && !errors.Is(err, app.ErrNotFound) {
		return err
	}
	if err := checkQueue(c, in.Queue); err != nil {
		return err
	}
	st, err := h.svc.UpdatePeriodic(c.Request().Context(), name, in, actor(c))
	if err != nil {
		return periodicErr(err)
	}
	return c.JSON(http.StatusOK, st)
}

func (h *handler) deletePeriodic(c echo.Context) error {
	name := periodicName(c)
	if _, err := h.periodicInScope(c, name); err != nil {
		return err
	}
	if err := h.svc.DeletePeriodic(c.Request().Context(), name, actor(c)); err != nil {
		return periodicErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *handler) pausePeriodic(c echo.Context) error  { return h.setPeriodicPaused(c, true) }
func (h *handler) resumePeriodic(c echo.Context) error { return h.setPeriodicPaused(c, false) }

func (h *handler) setPeriodicPaused(c echo.Context, paused bool) error {
	var in struct{}
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	name := periodicName(c)
	if _, err := h.periodicInScope(c, name); err != nil {
		return err
	}
	st, err := h.svc.SetPeriodicPaused(c.Request().Context(), name, paused, actor(c))
	if err != nil {
		return periodicErr(err)
	}
	return c.JSON(http.StatusOK, st)
}

// runPeriodic enqueues one job of the entry at once: {"job": {...}}.
func (h *handler) runPeriodic(c echo.Context) error {
	var in struct{}
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	name := periodicName(c)
	if _, err := h.periodicInScope(c, name); err != nil {
		return err
	}
	job, err := h.svc.RunPeriodic(c.Request().Context(), name, actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"job": job})
}
