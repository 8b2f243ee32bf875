// Package webhook sends the queue's webhooks and callbacks, and checks
// them at the receiving end. A delivery is a job of the internal queue
// app.WebhookQueue, inserted by package app in the transaction of the
// event it tells about; this package is what runs such a job: it builds
// the body, signs it (Sign), and POSTs it through a client that refuses
// the targets app.WebhookTargets refuses, on every address it dials, so a
// URL a user gave cannot reach the server's own network by DNS tricks.
// The rules (which events make deliveries, what a failure does) stay in
// app; Verify is for receivers, and package client offers it as
// client.VerifyWebhook.
package webhook
