package ui

import (
	"github.com/labstack/echo/v4"

	"github.com/queuehq/queue/app"
)

// listExtras reads the parameters GET /api/jobs gained for the operations
// console (issue 28) into in: kind_prefix, sort (id, the default, or
// run_at, which lists soonest first unless order=desc) and count (true adds
// the filter's total to the page).
func listExtras(c echo.Context, in *app.ListInput) error {
	in.KindPrefix = c.QueryParam("kind_prefix")
	switch sort := c.QueryParam("sort"); sort {
	case "", "id":
	case app.OrderRunAt:
		in.Order = app.OrderRunAt
		if c.QueryParam("order") == "" { // the order jobs run in
			in.Asc = true
		}
	default:
		return app.Invalid("sort", "sort %q is not one of id, run_at", clip(sort))
	}
	count, err := queryBool(c, "count")
	in.Count = count
	return err
}
