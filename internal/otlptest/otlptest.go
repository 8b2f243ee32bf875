// Package otlptest is an in-process OpenTelemetry collector for tests: an
// httptest server taking OTLP/HTTP protobuf on /v1/traces, decoded with
// the collector's own request type, so a test sees the spans exactly as a
// real collector would. Only _test.go files import it.
package otlptest

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Collector receives spans.
type Collector struct {
	// URL is the server's base URL (http://127.0.0.1:port), the value of
	// a [tracing] endpoint.
	URL string

	mu       sync.Mutex
	spans    []Span
	requests int
	headers  http.Header // of the last request
}

// Span is one received span, its ids in hex.
type Span struct {
	Name, TraceID, SpanID, ParentID, TraceState string
	Kind                                        tracepb.Span_SpanKind
	Start, End                                  time.Time
	Attrs                                       map[string]any // string, int64, bool, float64
	Status                                      *tracepb.Status
	Resource                                    map[string]any
}

// New starts a collector, closed when the test ends.
func New(t testing.TB) *Collector {
	c := &Collector{}
	srv := httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(srv.Close)
	c.URL = srv.URL
	return c
}

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces, application/x-protobuf", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.headers = r.Header.Clone()
	for _, rs := range req.ResourceSpans {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, Span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), TraceState: s.TraceState, Kind: s.Kind,
					Start: time.Unix(0, int64(s.StartTimeUnixNano)), End: time.Unix(0, int64(s.EndTimeUnixNano)),
					Attrs: attrs(s.Attributes), Status: s.Status, Resource: res})
			}
		}
	}
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		}
	}
	return m
}

// Spans returns the spans received so far.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Header is the header key of the last request received.
func (c *Collector) Header(key string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.headers.Get(key)
}

// Wait waits up to within for spans that ok accepts, and returns the
// last spans it saw.
func (c *Collector) Wait(t testing.TB, within time.Duration, ok func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		spans := c.Spans()
		if ok(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not get the spans wanted within %s; it has %d:\n%s", within, len(spans), Describe(spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Named returns the spans named name, in the order received.
func Named(spans []Span, name string) []Span {
	var out []Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Describe writes spans one a line, for failure messages.
func Describe(spans []Span) string {
	var b []byte
	for _, s := range spans {
		b = append(b, s.Name+" trace="+s.TraceID+" span="+s.SpanID+" parent="+s.ParentID+"\n"...)
	}
	return string(b)
}
