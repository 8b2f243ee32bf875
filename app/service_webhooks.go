package app

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The webhook subscriptions through the API (issue 27): made, changed and
// deleted as runtime settings of kind SettingWebhook, in the transaction
// of their audit entry, as periodic jobs made through the API are; every
// node reloads them within a second (RunSettingsReload). Subscriptions of
// the config file are read-only here (ErrWebhookInConfig). No answer,
// audit entry, event or job carries a secret.

// Webhooks returns every subscription in effect, the config file's first,
// each in name order.
func (s *Service) Webhooks(ctx context.Context) ([]WebhookSubscription, error) {
	subs := s.Config.WebhookRules().Subscriptions
	out := make([]WebhookSubscription, len(subs))
	copy(out, subs)
	return out, nil
}

// Webhook returns the subscription called name; ErrNotFound if there is none.
func (s *Service) Webhook(ctx context.Context, name string) (*WebhookSubscription, error) {
	w, ok := s.Config.WebhookRules().Subscription(name)
	if !ok {
		return nil, fmt.Errorf("webhook subscription %q: %w", clip(name), ErrNotFound)
	}
	return &w, nil
}

// CreateWebhook makes a subscription through the API, audited
// (webhook.create). Its name may not be one of the config file's
// (ErrWebhookInConfig) or of one made before (ErrWebhookExists).
func (s *Service) CreateWebhook(ctx context.Context, in WebhookInput, actor string) (*WebhookSubscription, error) {
	return s.saveWebhook(ctx, in, actor, "webhook.create")
}

// PutWebhook replaces the subscription called name (one made through the
// API) with in, audited (webhook.update); a secret left out keeps the
// stored one. One of the config file is ErrWebhookInConfig; none,
// ErrNotFound.
func (s *Service) PutWebhook(ctx context.Context, name string, in WebhookInput, actor string) (*WebhookSubscription, error) {
	if in.Name != "" && in.Name != name {
		return nil, Invalid("name", "the body names %q, the path %q: a subscription cannot be renamed (delete it and create another)", clip(in.Name), clip(name))
	}
	in.Name = name
	return s.saveWebhook(ctx, in, actor, "webhook.update")
}

func (s *Service) saveWebhook(ctx context.Context, in WebhookInput, actor, action string) (*WebhookSubscription, error) {
	if err := checkWebhookName(in.Name); err != nil {
		return nil, err
	}
	if s.webhookInFile(in.Name) {
		return nil, webhookInConfig(in.Name)
	}
	if action == "webhook.create" && in.Secret == "" {
		return nil, Invalid("secret", "a webhook secret is required, %d to %d characters (receivers check each request's HMAC-SHA256 signature with it)", MinWebhookSecret, MaxWebhookSecret)
	}
	var saved WebhookSubscription
	err := s.Store.Write(ctx, func(tx Tx) error {
		old, err := tx.Setting(SettingWebhook, in.Name)
		switch {
		case err != nil:
			return err
		case old != nil && action == "webhook.create":
			return fmt.Errorf("webhook subscription %q: %w (change it with PUT /api/webhooks/%s)", in.Name, ErrWebhookExists, in.Name)
		case old == nil && action == "webhook.update":
			return fmt.Errorf("webhook subscription %q: %w", in.Name, ErrNotFound)
		}
		w := WebhookSubscription{Name: in.Name, URL: in.URL, Secret: in.Secret, Events: in.Events, Queues: in.Queues,
			Disabled: in.Disabled, Source: WebhookFromAPI, CreatedAt: tx.Now(), UpdatedAt: tx.Now()}
		if old != nil {
			prev, err := webhookOf(*old)
			if err != nil {
				return err
			}
			w.CreatedAt = prev.CreatedAt
			if w.Secret == "" {
				w.Secret = prev.Secret
			}
		}
		if err := ValidateWebhook(&w, s.Config.Webhooks.Targets); err != nil {
			return err
		}
		value, err := json.Marshal(webhookRecord{URL: w.URL, Secret: w.Secret, Events: w.Events, Queues: w.Queues,
			Disabled: w.Disabled, CreatedAt: w.CreatedAt})
		if err != nil {
			return err
		}
		shown, err := json.Marshal(w) // the audit's record of it: never the secret
		if err != nil {
			return err
		}
		saved = w
		return s.writeSetting(tx, SettingsRecord{Kind: SettingWebhook, Name: w.Name, Value: value, UpdatedBy: actor}, false,
			"", map[string]any{"webhook": w.Name, "action": strings.TrimPrefix(action, "webhook.")},
			AuditEntry{Actor: actor, Action: action, Target: "webhook " + w.Name, Filter: shown})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", action, err)
	}
	s.reloadAfterChange(ctx)
	return &saved, nil
}

// DeleteWebhook deletes the subscription called name (one made through
// the API), audited (webhook.delete). Its deliveries already queued stay
// jobs, but are not sent: with the subscription gone they have neither a
// URL nor a secret (WebhookTarget), so the delivery worker dead-letters
// each at once (a permanent failure) when it comes to it.
func (s *Service) DeleteWebhook(ctx context.Context, name, actor string) error {
	if s.webhookInFile(name) {
		return webhookInConfig(name)
	}
	err := s.Store.Write(ctx, func(tx Tx) error {
		old, err := tx.Setting(SettingWebhook, name)
		if err != nil {
			return err
		}
		if old == nil {
			return fmt.Errorf("webhook subscription %q: %w", clip(name), ErrNotFound)
		}
		return s.writeSetting(tx, SettingsRecord{Kind: SettingWebhook, Name: name}, true,
			"", map[string]any{"webhook": name, "action": "delete"},
			AuditEntry{Actor: actor, Action: "webhook.delete", Target: "webhook " + name})
	})
	if err != nil {
		return fmt.Errorf("webhook.delete: %w", err)
	}
	s.reloadAfterChange(ctx)
	return nil
}

// TestWebhook makes a delivery of a webhook.test event to the
// subscription called name (enabled or not), audited (webhook.test) in
// the same transaction, and returns the delivery job's id.
func (s *Service) TestWebhook(ctx context.Context, name, actor string) (int64, error) {
	w, err := s.Webhook(ctx, name)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.Store.Write(ctx, func(tx Tx) error {
		e := Event{Type: EventWebhookTest, At: tx.Now(), Data: eventData(map[string]any{"subscription": w.Name})}
		jobs, err := tx.Insert(deliveryJob(tx.WebhookRules(), WebhookDelivery{Subscription: w.Name, Event: e}, tx.Now()))
		if err != nil {
			return err
		}
		id = jobs[0].ID
		return recordAudit(tx, &AuditEntry{Actor: actor, Action: "webhook.test", Target: "webhook " + w.Name,
			Filter: eventData(map[string]any{"job_id": id})}, 1)
	})
	if err != nil {
		return 0, fmt.Errorf("webhook.test %s: %w", name, err)
	}
	return id, nil
}

// WebhookDeliveryInfo is one delivery of a subscription as GET
// /api/webhooks/{name}/deliveries shows it: the delivery job (or its
// dead-letter row) and the event it carries.
type WebhookDeliveryInfo struct {
	JobID       int64  `json:"job_id"`
	Status      string `json:"status"` // queued, processing, done, cancelled or dead_letter
	Event       string `json:"event"`
	EventJobID  *int64 `json:"event_job_id"`
	Attempts    int    `json:"attempts"`
	MaxAttempts int    `json:"max_attempts"`
	LastError   string `json:"last_error"`
	// ResponseStatus is the receiver's HTTP status of the delivery that
	// succeeded (from the job's result).
	ResponseStatus *int       `json:"response_status"`
	CreatedAt      time.Time  `json:"created_at"`
	FinishedAt     *time.Time `json:"finished_at"`
}

// MarshalJSON writes times as every answer of the API does.
func (d WebhookDeliveryInfo) MarshalJSON() ([]byte, error) {
	type plain WebhookDeliveryInfo
	var fin *string
	if d.FinishedAt != nil {
		s := FormatTime(*d.FinishedAt)
		fin = &s
	}
	return json.Marshal(struct {
		plain
		CreatedAt  string  `json:"created_at"`
		FinishedAt *string `json:"finished_at"`
	}{plain(d), FormatTime(d.CreatedAt), fin})
}

// WebhookDeliveryPage is one page of a subscription's deliveries, newest
// first.
type WebhookDeliveryPage struct {
	Deliveries []WebhookDeliveryInfo `json:"deliveries"`
	NextCursor string                `json:"next_cursor"`
}

// deliveryDeadScan bounds the dead-letter rows of a subscription one page
// looks at: they are listed by the time of their move, the page by id.
const deliveryDeadScan = 1000

// WebhookDeliveries returns up to limit (default 50, at most 1000)
// deliveries of the subscription called name, newest first, after cursor
// (a next_cursor of an earlier page): its delivery jobs and their
// dead-letter rows. A subscription deleted since has none to show
// (ErrNotFound).
func (s *Service) WebhookDeliveries(ctx context.Context, name string, limit int, cursor string) (*WebhookDeliveryPage, error) {
	if _, err := s.Webhook(ctx, name); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = 50
	}
	if limit < 1 || limit > 1000 {
		return nil, Invalid("limit", "limit must be between 1 and 1000")
	}
	var after int64
	if cursor != "" {
		id, asc, err := DecodeCursor(cursor)
		if err != nil {
			return nil, err
		}
		if asc {
			return nil, Invalid("cursor", "cursor is not one this listing made; start again without it")
		}
		after = id
	}
	tag := WebhookTagPrefix + name
	jobs, err := s.Store.List(ctx, JobFilter{Queue: WebhookQueue, Tag: tag, AfterID: after, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries of %s: %w", name, err)
	}
	df := DeadFilter{Queue: WebhookQueue, Tag: tag, Limit: deliveryDeadScan}
	if after > 0 {
		df.MaxID = after - 1
	}
	dead, err := s.Store.ListDead(ctx, df)
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries of %s: %w", name, err)
	}
	all := make([]WebhookDeliveryInfo, 0, len(jobs)+len(dead))
	for _, j := range jobs {
		all = append(all, deliveryOfJob(j))
	}
	for _, d := range dead {
		all = append(all, deliveryOfDead(d))
	}
	sortDeliveries(all)
	page := &WebhookDeliveryPage{Deliveries: all[:min(len(all), limit)]}
	if len(all) > limit || len(jobs) == limit {
		page.NextCursor = EncodeCursor(page.Deliveries[len(page.Deliveries)-1].JobID, false)
	}
	return page, nil
}

// sortDeliveries puts ds newest (highest id) first.
func sortDeliveries(ds []WebhookDeliveryInfo) {
	slices.SortFunc(ds, func(a, b WebhookDeliveryInfo) int { return cmp.Compare(b.JobID, a.JobID) })
}

// deliveryEvent reads the event a delivery's payload carries.
func deliveryEvent(payload json.RawMessage) (string, *int64) {
	var d WebhookDelivery
	if json.Unmarshal(payload, &d) != nil {
		return "", nil
	}
	if d.Event.JobID == 0 {
		return d.Event.Type, nil
	}
	id := d.Event.JobID
	return d.Event.Type, &id
}

func deliveryOfJob(j *Job) WebhookDeliveryInfo {
	d := WebhookDeliveryInfo{JobID: j.ID, Status: string(j.Status), Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		CreatedAt: j.CreatedAt, FinishedAt: j.FinishedAt}
	d.Event, d.EventJobID = deliveryEvent(j.Payload)
	if n := len(j.Errors); n > 0 {
		d.LastError = j.Errors[n-1].Error
	}
	if j.Status == StatusDone {
		var r struct {
			Status *int `json:"status"`
		}
		if json.Unmarshal(j.Result, &r) == nil {
			d.ResponseStatus = r.Status
		}
	}
	return d
}

func deliveryOfDead(x *DeadJob) WebhookDeliveryInfo {
	at := x.MovedAt
	d := WebhookDeliveryInfo{JobID: x.ID, Status: string(StatusDeadLetter), Attempts: x.Attempts, MaxAttempts: x.MaxAttempts,
		LastError: x.LastError, CreatedAt: x.OriginalCreatedAt, FinishedAt: &at}
	d.Event, d.EventJobID = deliveryEvent(x.Payload)
	return d
}

// WebhookTarget returns the URL and the secret of the subscription called
// name as they stand now, for the delivery worker to send to and sign
// with: a delivery job names only its subscription (WebhookDelivery), so
// one queued before a PUT goes to the new URL, signed with the new
// secret. A subscription made or changed on another node a moment ago is
// found after a reload; none is ErrNotFound (it was deleted: its
// deliveries can be neither addressed nor signed).
func (s *Service) WebhookTarget(ctx context.Context, name string) (url, secret string, err error) {
	if w, ok := s.Config.WebhookRules().Subscription(name); ok {
		return w.URL, w.Secret, nil
	}
	if err := s.ReloadSettings(ctx); err != nil {
		s.Log.Warn().Err(err).Msg("reloading settings for a webhook's target")
	}
	if w, ok := s.Config.WebhookRules().Subscription(name); ok {
		return w.URL, w.Secret, nil
	}
	return "", "", fmt.Errorf("webhook subscription %q: %w", clip(name), ErrNotFound)
}

// CallbackSecret returns the secret that signs callbacks: [webhooks]
// callback_secret, else one generated once (32 random bytes, hex) and
// kept as the runtime setting (SettingWebhookSecret, "callback"). Nodes
// that generate it at once meet at one row (Tx.Setting): every node signs
// with the same secret.
func (s *Service) CallbackSecret(ctx context.Context) (string, error) {
	if sec := s.Config.Webhooks.CallbackSecret; sec != "" {
		return sec, nil
	}
	if p := s.Config.webhooks.secret.Load(); p != nil {
		return *p, nil
	}
	var secret string
	err := s.Store.Write(ctx, func(tx Tx) error {
		r, err := tx.Setting(SettingWebhookSecret, callbackSecretName)
		if err != nil {
			return err
		}
		if r != nil {
			secret, err = callbackSecretOf(*r)
			return err
		}
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		secret = hex.EncodeToString(b)
		value, _ := json.Marshal(map[string]string{"secret": secret})
		return tx.PutSetting(SettingsRecord{Kind: SettingWebhookSecret, Name: callbackSecretName, Value: value,
			UpdatedAt: tx.Now(), UpdatedBy: "queue"})
	})
	if err != nil {
		return "", fmt.Errorf("callback secret: %w", err)
	}
	s.Config.webhooks.secret.Store(&secret)
	return secret, nil
}

// StoredCallbackSecret reads the generated callback secret from recs (the
// store's runtime settings), for a command that can only read the store;
// false if none was generated yet.
func StoredCallbackSecret(recs []SettingsRecord) (string, bool) {
	for _, r := range recs {
		if r.Kind == SettingWebhookSecret && r.Name == callbackSecretName {
			if sec, err := callbackSecretOf(r); err == nil {
				return sec, true
			}
		}
	}
	return "", false
}

// callbackSecretOf reads the secret of the runtime setting r.
func callbackSecretOf(r SettingsRecord) (string, error) {
	var v struct {
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal(r.Value, &v); err != nil || v.Secret == "" {
		return "", fmt.Errorf("stored callback secret cannot be read: %v", err)
	}
	return v.Secret, nil
}

func (s *Service) webhookInFile(name string) bool {
	for _, w := range s.Config.Webhooks.Subscriptions {
		if w.Name == name {
			return true
		}
	}
	return false
}

func webhookInConfig(name string) error {
	return fmt.Errorf("webhook subscription %q is declared in the config file: %w; edit the file's [[webhooks.subscriptions]] entry and restart",
		clip(name), ErrWebhookInConfig)
}
