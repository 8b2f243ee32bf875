package ui

import (
	"cmp"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// suggestRoutes adds GET /api/suggest (issue 28): the search suggestions
// of the console's filters.
func (h *handler) suggestRoutes(api *echo.Group) {
	api.GET("/suggest", h.suggest)
}

// suggestion is the answer of GET /api/suggest.
type suggestion struct {
	Field  string   `json:"field"`
	Values []string `json:"values"`
}

// suggest is GET /api/suggest?field=kind|queue|tag&prefix=&limit=. A token
// limited to some queues gets only those of its queues; kinds and tags
// span every queue, so it may not ask for them.
func (h *handler) suggest(c echo.Context) error {
	field, prefix := c.QueryParam("field"), c.QueryParam("prefix")
	if field == "" {
		return app.Invalid("field", "field is required: kind, queue or tag")
	}
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if c.QueryParam("limit") != "" && (limit < 1 || limit > app.MaxSuggest) {
		return app.Invalid("limit", "limit must be between 1 and %d", app.MaxSuggest)
	}
	p := who(c)
	if p.restricted() && field != "queue" {
		return denied("token %q is limited to queues %s; kinds and tags span every queue", p.name, strings.Join(p.queues, ", "))
	}
	values, err := h.svc.Suggest(c.Request().Context(), field, prefix, limit) // validates field, prefix and limit
	if err != nil {
		return err
	}
	if p.restricted() {
		// Its own queues, whether or not they hold jobs yet (the
		// Service's answer may have stopped at limit before them).
		values = []string{}
		for _, q := range slices.Sorted(slices.Values(p.queues)) {
			if strings.HasPrefix(q, prefix) && len(values) < cmp.Or(limit, app.DefaultSuggest) {
				values = append(values, q)
			}
		}
	}
	return c.JSON(http.StatusOK, suggestion{Field: field, Values: values})
}
