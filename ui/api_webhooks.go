package ui

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

func init() {
	queryParams["GET /api/webhooks/:name/deliveries"] = []string{"limit", "cursor"}
	auditActions = append(auditActions, "webhook.create", "webhook.delete", "webhook.test", "webhook.update")
	// Every webhook route needs admin, reading too: a subscription's URL
	// may carry what only operators should see, and its deliveries name
	// the jobs of every queue.
	for _, r := range []string{"/api/webhooks", "/api/webhooks/:name", "/api/webhooks/:name/deliveries"} {
		routeRoles["GET "+r] = RoleAdmin
		routeRoles["HEAD "+r] = RoleAdmin
	}
}

// webhookRoutes adds the webhook subscription routes (issue 27): list,
// create, show, replace, delete, a subscription's deliveries and a test
// delivery. Each needs admin and a token of every queue; each change is
// audited by the Service, without the secret, which no answer carries.
func (h *handler) webhookRoutes(api *echo.Group) {
	api.GET("/webhooks", everyQueue(h.listWebhooks))
	api.POST("/webhooks", everyQueue(h.createWebhook))
	api.GET("/webhooks/:name", everyQueue(h.getWebhook))
	api.PUT("/webhooks/:name", everyQueue(h.putWebhook))
	api.DELETE("/webhooks/:name", everyQueue(h.deleteWebhook))
	api.GET("/webhooks/:name/deliveries", everyQueue(h.webhookDeliveries))
	api.POST("/webhooks/:name/test", everyQueue(h.testWebhook))
}

// webhookErr answers the errors of the webhook routes that are theirs.
func webhookErr(err error) error {
	switch {
	case errors.Is(err, app.ErrWebhookInConfig):
		return newError(http.StatusConflict, "webhook_in_config", "%s", message(err))
	case errors.Is(err, app.ErrWebhookExists):
		return newError(http.StatusConflict, "webhook_exists", "%s", message(err))
	}
	return err
}

// listWebhooks answers {"webhooks": [...]}, the config file's first.
func (h *handler) listWebhooks(c echo.Context) error {
	subs, err := h.svc.Webhooks(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"webhooks": subs})
}

// createWebhook takes {"name", "url", "secret", "events", "queues", "disabled"}.
func (h *handler) createWebhook(c echo.Context) error {
	var in app.WebhookInput
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	w, err := h.svc.CreateWebhook(c.Request().Context(), in, actor(c))
	if err != nil {
		return webhookErr(err)
	}
	return c.JSON(http.StatusCreated, w)
}

func (h *handler) getWebhook(c echo.Context) error {
	w, err := h.svc.Webhook(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, w)
}

// putWebhook replaces a subscription; a body without "secret" keeps it.
func (h *handler) putWebhook(c echo.Context) error {
	var in app.WebhookInput
	if err := bind(c, &in, smallBody, false); err != nil {
		return err
	}
	w, err := h.svc.PutWebhook(c.Request().Context(), c.Param("name"), in, actor(c))
	if err != nil {
		return webhookErr(err)
	}
	return c.JSON(http.StatusOK, w)
}

func (h *handler) deleteWebhook(c echo.Context) error {
	if err := h.svc.DeleteWebhook(c.Request().Context(), c.Param("name"), actor(c)); err != nil {
		return webhookErr(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// webhookDeliveries answers {"deliveries": [...], "next_cursor"}, newest first.
func (h *handler) webhookDeliveries(c echo.Context) error {
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return app.Invalid("limit", "limit must be a whole number between 1 and 1000")
		}
		limit = n
		if limit == 0 {
			limit = -1 // an explicit 0 is out of range, not the default
		}
	}
	page, err := h.svc.WebhookDeliveries(c.Request().Context(), c.Param("name"), limit, c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// testWebhook makes a delivery of a webhook.test event: 201 {"job_id": n}.
func (h *handler) testWebhook(c echo.Context) error {
	var in struct{}
	if err := bind(c, &in, smallBody, true); err != nil {
		return err
	}
	id, err := h.svc.TestWebhook(c.Request().Context(), c.Param("name"), actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]int64{"job_id": id})
}
