package commands

import (
	"context"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/queuehq/queue/app"
	"github.com/queuehq/queue/tracing"
)

// tracingConfig is the [tracing] table: where `queue serve` sends the
// spans of traced jobs (docs/integrations.md). Without an endpoint here or
// in OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT,
// nothing is traced (jobs still keep and pass on their traceparent).
type tracingConfig struct {
	// Endpoint is the collector's OTLP/HTTP URL, e.g.
	// http://127.0.0.1:4318 (/v1/traces is added when it has no path).
	Endpoint string `toml:"endpoint"`
	// ServiceName is the spans' service.name; default OTEL_SERVICE_NAME,
	// else "queue".
	ServiceName string `toml:"service_name"`
}

// validateTracing checks [tracing].
func (c *config) validateTracing() error {
	t := c.Tracing
	if t.Endpoint != "" {
		if err := tracing.CheckEndpoint(t.Endpoint); err != nil {
			return bad("tracing.endpoint", "%v", err)
		}
	}
	if len(t.ServiceName) > 255 || strings.IndexFunc(t.ServiceName, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return bad("tracing.service_name", "at most 255 characters, none a control character")
	}
	return nil
}

// startTracing starts sending spans as cfg (or the OTEL_* environment)
// says and hands svc the Tracer; the func it returns sends the spans
// still held, within 5s (call it last, as serve stops). Without an
// endpoint it does nothing. An OTEL_* endpoint that is not a URL is
// logged and tracing stays off: the variables may be meant for other
// programs too; a bad [tracing] endpoint never gets here (validateTracing).
func startTracing(cfg *config, svc *app.Service, version string, log zerolog.Logger) (stop func(), err error) {
	log = log.With().Str("component", "tracing").Logger()
	t, err := tracing.New(tracing.Config{Endpoint: cfg.Tracing.Endpoint, ServiceName: cfg.Tracing.ServiceName, Version: version}, log)
	if err != nil && cfg.Tracing.Endpoint == "" {
		log.Warn().Err(err).Msg("tracing stays off")
		return func() {}, nil
	}
	if err != nil || t == nil {
		return func() {}, err
	}
	svc.Tracer = t
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.Shutdown(ctx); err != nil {
			log.Warn().Err(err).Msg("tracing: spans left unsent")
		}
	}, nil
}
