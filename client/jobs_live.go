package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/queuehq/queue/app"
)

// BulkLive runs a bulk action on live jobs: app.LiveCancel, LiveRetry,
// LiveReschedule or LivePrioritize, on the jobs in's filter finds (POST
// /api/jobs/{action}). With in.DryRun it only counts and shows a sample;
// the answer's Bound, passed back, keeps the action to what was counted.
func (c *Client) BulkLive(ctx context.Context, action string, in app.LiveBulkInput) (*app.LiveBulkResult, error) {
	var out app.LiveBulkResult
	_, _, err := c.do(ctx, http.MethodPost, "/api/jobs/"+url.PathEscape(action), in, &out, nil)
	return &out, err
}
