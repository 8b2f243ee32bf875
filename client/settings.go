package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/queuehq/queue/app"
)

// QueueSettings reads the settings of queue (GET
// /api/queues/{queue}/settings): the policy in effect, the fields set at
// runtime, the fields the config file sets, and the source of each field.
func (c *Client) QueueSettings(ctx context.Context, queue string) (*app.QueueSettingsView, error) {
	var out app.QueueSettingsView
	if _, _, err := c.do(ctx, http.MethodGet, "/api/queues/"+url.PathEscape(queue)+"/settings", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// PatchQueueSettings changes settings of queue at runtime (PATCH
// /api/queues/{queue}/settings): each name a QueueConfig json name, its
// value the new one (durations as "30s", key_rate as "10/1m") or null to
// unset it. It needs an admin token.
func (c *Client) PatchQueueSettings(ctx context.Context, queue string, patch map[string]json.RawMessage) (*app.QueueSettingsView, error) {
	var out app.QueueSettingsView
	if _, _, err := c.do(ctx, http.MethodPatch, "/api/queues/"+url.PathEscape(queue)+"/settings", patch, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// ResetQueueSettings unsets every runtime setting of queue (DELETE
// /api/queues/{queue}/settings): the config file's policy applies again.
func (c *Client) ResetQueueSettings(ctx context.Context, queue string) (*app.QueueSettingsView, error) {
	var out app.QueueSettingsView
	if _, _, err := c.do(ctx, http.MethodDelete, "/api/queues/"+url.PathEscape(queue)+"/settings", nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// Periodic lists the periodic jobs (GET /api/periodic), of the config
// file and made through the API, with their state, last and next fire.
func (c *Client) Periodic(ctx context.Context) ([]app.PeriodicStatus, error) {
	var out struct {
		Periodic []app.PeriodicStatus `json:"periodic"`
	}
	_, _, err := c.do(ctx, http.MethodGet, "/api/periodic", nil, &out, nil)
	return out.Periodic, err
}

// GetPeriodic reads the periodic job called name.
func (c *Client) GetPeriodic(ctx context.Context, name string) (*app.PeriodicStatus, error) {
	return c.periodic(ctx, http.MethodGet, name, "", nil)
}

// CreatePeriodic makes a periodic job (POST /api/periodic); in.Name is
// required and may not be one of the config file's.
func (c *Client) CreatePeriodic(ctx context.Context, in app.PeriodicInput) (*app.PeriodicStatus, error) {
	var out app.PeriodicStatus
	if _, _, err := c.do(ctx, http.MethodPost, "/api/periodic", in, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// UpdatePeriodic replaces the periodic job called name, one made through
// the API (PUT /api/periodic/{name}).
func (c *Client) UpdatePeriodic(ctx context.Context, name string, in app.PeriodicInput) (*app.PeriodicStatus, error) {
	return c.periodic(ctx, http.MethodPut, name, "", in)
}

// DeletePeriodic deletes the periodic job called name, one made through
// the API.
func (c *Client) DeletePeriodic(ctx context.Context, name string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/periodic/"+url.PathEscape(name), nil, nil, nil)
	return err
}

// SetPeriodicPaused pauses or resumes the periodic job called name.
func (c *Client) SetPeriodicPaused(ctx context.Context, name string, paused bool) (*app.PeriodicStatus, error) {
	action := "/resume"
	if paused {
		action = "/pause"
	}
	return c.periodic(ctx, http.MethodPost, name, action, nil)
}

// RunPeriodic enqueues one job of the periodic job called name at once.
func (c *Client) RunPeriodic(ctx context.Context, name string) (*app.Job, error) {
	var out struct {
		Job *app.Job `json:"job"`
	}
	if _, _, err := c.do(ctx, http.MethodPost, "/api/periodic/"+url.PathEscape(name)+"/run", nil, &out, nil); err != nil {
		return nil, err
	}
	return out.Job, nil
}

func (c *Client) periodic(ctx context.Context, method, name, action string, in any) (*app.PeriodicStatus, error) {
	var out app.PeriodicStatus
	if _, _, err := c.do(ctx, method, "/api/periodic/"+url.PathEscape(name)+action, in, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
