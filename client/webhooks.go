package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/queuehq/queue/app"
)

// The webhook subscriptions (GET/POST /api/webhooks, ...): every call
// needs an admin token of every queue. No answer carries a secret: a
// subscription read back has an empty Secret (the API says secret_set).

// Webhooks lists the subscriptions, the config file's first (GET /api/webhooks).
func (c *Client) Webhooks(ctx context.Context) ([]app.WebhookSubscription, error) {
	var out struct {
		Webhooks []app.WebhookSubscription `json:"webhooks"`
	}
	if _, _, err := c.do(ctx, http.MethodGet, "/api/webhooks", nil, &out, nil); err != nil {
		return nil, err
	}
	return out.Webhooks, nil
}

// GetWebhook reads the subscription called name (GET /api/webhooks/{name}).
func (c *Client) GetWebhook(ctx context.Context, name string) (*app.WebhookSubscription, error) {
	return c.webhook(ctx, http.MethodGet, name, nil)
}

// CreateWebhook makes a subscription (POST /api/webhooks); its name must
// be new (409 webhook_exists) and not the config file's (409
// webhook_in_config).
func (c *Client) CreateWebhook(ctx context.Context, in app.WebhookInput) (*app.WebhookSubscription, error) {
	var out app.WebhookSubscription
	if _, _, err := c.do(ctx, http.MethodPost, "/api/webhooks", in, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// PutWebhook replaces the subscription called name (PUT
// /api/webhooks/{name}); an empty in.Secret keeps the stored one.
func (c *Client) PutWebhook(ctx context.Context, name string, in app.WebhookInput) (*app.WebhookSubscription, error) {
	return c.webhook(ctx, http.MethodPut, name, in)
}

// DeleteWebhook deletes the subscription called name (DELETE /api/webhooks/{name}).
func (c *Client) DeleteWebhook(ctx context.Context, name string) error {
	_, _, err := c.do(ctx, http.MethodDelete, "/api/webhooks/"+url.PathEscape(name), nil, nil, nil)
	return err
}

// WebhookDeliveries reads a page of the subscription's deliveries, newest
// first (GET /api/webhooks/{name}/deliveries); limit 0 is the server's
// default, cursor "" the first page.
func (c *Client) WebhookDeliveries(ctx context.Context, name string, limit int, cursor string) (*app.WebhookDeliveryPage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	path := "/api/webhooks/" + url.PathEscape(name) + "/deliveries"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out app.WebhookDeliveryPage
	if _, _, err := c.do(ctx, http.MethodGet, path, nil, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}

// TestWebhook makes a delivery of a webhook.test event to the
// subscription (POST /api/webhooks/{name}/test) and returns its job's id.
func (c *Client) TestWebhook(ctx context.Context, name string) (int64, error) {
	var out struct {
		JobID int64 `json:"job_id"`
	}
	if _, _, err := c.do(ctx, http.MethodPost, "/api/webhooks/"+url.PathEscape(name)+"/test", nil, &out, nil); err != nil {
		return 0, err
	}
	return out.JobID, nil
}

func (c *Client) webhook(ctx context.Context, method, name string, in any) (*app.WebhookSubscription, error) {
	var out app.WebhookSubscription
	if _, _, err := c.do(ctx, method, "/api/webhooks/"+url.PathEscape(name), in, &out, nil); err != nil {
		return nil, err
	}
	return &out, nil
}
