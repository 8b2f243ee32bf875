package tracing

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// exportTimeout bounds one request to the collector (OTLP's default).
const exportTimeout = 10 * time.Second

// exporter sends batches of spans to an OTLP/HTTP collector as protobuf:
// POST url, Content-Type application/x-protobuf, the body an
// ExportTraceServiceRequest. It encodes it as TracesData, which OTLP
// defines with the same fields and numbers, so the gRPC service types
// (and gRPC) stay out of the binary. A batch the collector refuses is
// dropped (the SDK's error handler logs it); nothing is retried.
type exporter struct {
	url     string
	headers map[string]string
	client  *http.Client
}

var _ sdktrace.SpanExporter = (*exporter)(nil)

func newExporter(url string, headers map[string]string) *exporter {
	return &exporter{url: url, headers: headers, client: &http.Client{Timeout: exportTimeout}}
}

// ExportSpans implements sdktrace.SpanExporter.
func (e *exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := proto.Marshal(encode(spans))
	if err != nil {
		return fmt.Errorf("encode %d spans: %w", len(spans), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("send spans to %s: %w", e.url, err)
	}
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("send spans to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("send %d spans to %s: %s %q", len(spans), e.url, resp.Status, msg)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter.
func (e *exporter) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// encode groups spans by resource and instrumentation scope, as OTLP sends
// them.
func encode(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	type scopeKey struct{ name, version, schema string }
	out := &tracepb.TracesData{}
	byRes := map[attribute.Distinct]*tracepb.ResourceSpans{}
	byScope := map[attribute.Distinct]map[scopeKey]*tracepb.ScopeSpans{}
	for _, s := range spans {
		res := s.Resource()
		rk := res.Equivalent()
		rs := byRes[rk]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: attrs(res.Attributes())}, SchemaUrl: res.SchemaURL()}
			byRes[rk] = rs
			byScope[rk] = map[scopeKey]*tracepb.ScopeSpans{}
			out.ResourceSpans = append(out.ResourceSpans, rs)
		}
		is := s.InstrumentationScope()
		sk := scopeKey{is.Name, is.Version, is.SchemaURL}
		ss := byScope[rk][sk]
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: is.Name, Version: is.Version}, SchemaUrl: is.SchemaURL}
			byScope[rk][sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	return out
}

// span is s in OTLP's form.
func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:                tid[:],
		SpanId:                 sid[:],
		TraceState:             sc.TraceState().String(),
		Flags:                  uint32(sc.TraceFlags()) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK),
		Name:                   s.Name(),
		Kind:                   kind(s.SpanKind()),
		StartTimeUnixNano:      uint64(max(s.StartTime().UnixNano(), 0)),
		EndTimeUnixNano:        uint64(max(s.EndTime().UnixNano(), 0)),
		Attributes:             attrs(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
	}
	if parent := s.Parent(); parent.IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
		if parent.IsRemote() {
			p.Flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
		}
	}
	for _, ev := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{TimeUnixNano: uint64(max(ev.Time.UnixNano(), 0)), Name: ev.Name,
			Attributes: attrs(ev.Attributes), DroppedAttributesCount: uint32(ev.DroppedAttributeCount)})
	}
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.Links = append(p.Links, &tracepb.Span_Link{TraceId: ltid[:], SpanId: lsid[:], TraceState: l.SpanContext.TraceState().String(),
			Attributes: attrs(l.Attributes), DroppedAttributesCount: uint32(l.DroppedAttributeCount), Flags: uint32(l.SpanContext.TraceFlags())})
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK}
	case codes.Error:
		p.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
	}
	return p
}

func kind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

// attrs are kvs in OTLP's form.
func attrs(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func value(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), func(b bool) attribute.Value { return attribute.BoolValue(b) })
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}

func array[T any](vs []T, of func(T) attribute.Value) *commonpb.AnyValue {
	arr := &commonpb.ArrayValue{}
	for _, x := range vs {
		arr.Values = append(arr.Values, value(of(x)))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}
}
