package ui

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// queryParams are the query parameters each API route takes, by method and
// echo's route path: written once, read by checkQuery for every /api/
// route. A route missing here takes none. So a typo (?qeue=email) is a 400
// naming it, never a list that quietly ignores the filter. A handler that
// reads a new parameter adds it here, and to docs/api.md.
var queryParams = map[string][]string{
	"GET /api/jobs": {"queue", "kind", "status", "tag", "key", "replayed_from", "workflow", "limit", "cursor", "order",
		"error", "created_after", "created_before", "run_after", "run_before", "finished_after", "finished_before",
		"kind_prefix", "sort", "count"},
	"GET /api/jobs/:id":           {"wait", "events"},
	"GET /api/jobs/:id/log":       {"attempt", "after", "limit", "follow"},
	"GET /api/dlq":                {"queue", "kind", "tag", "reason", "moved_after", "moved_before", "replayed", "limit", "cursor", "order"},
	"GET /api/events":             {"queue", "kind", "job", "logs"},
	"GET /api/audit":              {"action", "before", "limit"},
	"GET /api/workflows":          {"status", "name", "limit", "cursor"},
	"GET /api/queues/:queue/keys": {"limit"},
	"GET /api/suggest":            {"field", "prefix", "limit"},
}

// queryPrefixes are the families of query parameters a route takes beside
// queryParams: payload.PATH on GET /api/jobs (app.ParseJobQuery).
var queryPrefixes = map[string][]string{
	"GET /api/jobs": {app.PayloadParam},
}

// auditActions are the values GET /api/audit?action= takes: every action
// the Service records (app/admin.go, app/service.go); a test checks that
// each recorded action is here.
var auditActions = []string{
	"auth.denied", "dlq.move", "dlq.purge", "dlq.replay", "job.cancel",
	"jobs.cancel", "jobs.delete", "jobs.prioritize", "jobs.reschedule", "jobs.retry",
	"periodic.create", "periodic.delete", "periodic.pause", "periodic.resume", "periodic.run", "periodic.update",
	"queue.drain", "queue.pause", "queue.resume", "queue.settings", "queue.settings.reset", "workflow.cancel",
	"worker.quiet", "worker.stop",
}

// checkQuery refuses a request to an /api/ route that carries a query
// parameter the route does not take, or one parameter twice: 400
// invalid_field naming it and what the route takes.
func (h *handler) checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		path := c.Path()
		if !strings.HasPrefix(path, "/api/") || c.Request().URL.RawQuery == "" {
			return next(c)
		}
		route := c.Request().Method + " " + path
		if c.Request().Method == http.MethodHead {
			route = http.MethodGet + " " + path
		}
		takes := queryParams[route]
		names := make([]string, 0, len(c.QueryParams()))
		for name := range c.QueryParams() {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if !slices.Contains(takes, name) && !hasPrefix(name, queryPrefixes[route]) {
				list := "none"
				if len(takes) > 0 {
					list = strings.Join(takes, ", ")
				}
				return &apiError{Status: http.StatusBadRequest, Code: "invalid_field", Field: clip(name),
					Message: "unknown query parameter " + strconv.Quote(clip(name)) + "; " + route + " takes " + list}
			}
			if len(c.QueryParams()[name]) > 1 {
				return app.Invalid(name, "query parameter %s is given %d times; give it once", name, len(c.QueryParams()[name]))
			}
		}
		return next(c)
	}
}

// hasPrefix reports whether name starts with one of prefixes (and goes on).
func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if len(name) > len(p) && strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
