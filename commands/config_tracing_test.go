package commands

import (
	"strings"
	"testing"
)

// [tracing] takes an endpoint (an http(s) URL) and a service name; a bad
// one stops with the key and its line, as `config check` reports it.
func TestConfigTracing(t *testing.T) {
	cfg, err := parseConfig("queue.toml", []byte("[tracing]\nendpoint = \"http://127.0.0.1:4318\"\nservice_name = \"billing-queue\"\n"))
	if err != nil || cfg.Tracing.Endpoint != "http://127.0.0.1:4318" || cfg.Tracing.ServiceName != "billing-queue" {
		t.Fatalf("parseConfig: %+v, %v", cfg, err)
	}
	for text, want := range map[string]string{
		"[tracing]\nendpoint = \"127.0.0.1:4318\"\n":        "queue.toml:2: tracing.endpoint",
		"[tracing]\nendpoint = \"http://u:p@c:4318\"\n":     "OTEL_EXPORTER_OTLP_HEADERS",
		"[tracing]\n\nservice_name = \"a\\u0007b\"\n":       "queue.toml:3: tracing.service_name",
		"[tracing]\nendpont = \"http://127.0.0.1:4318\"\n":  "tracing.endpont: unknown key",
		"[tracing]\nendpoint = \"grpc://127.0.0.1:4317\"\n": "http:// or https://",
	} {
		if _, err := parseConfig("queue.toml", []byte(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error with %q", text, err, want)
		}
	}
}
