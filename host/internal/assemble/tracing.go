package assemble

import (
	"context"
	"fmt"
	"net/url"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// newTracing starts the OTLP/HTTP exporter of tracing.* (nil when tracing
// is off). Spans are batched; Close flushes them.
func newTracing(ctx context.Context, c config.Tracing, version string) (*sdktrace.TracerProvider, error) {
	if c.OTLPEndpoint == "" {
		return nil, nil
	}
	u, err := url.Parse(c.OTLPEndpoint) // validated with the config
	if err != nil {
		return nil, fmt.Errorf("config tracing.otlp_endpoint: %w", err)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "skillhost"), attribute.String("service.version", version))),
	), nil
}

// headerCarrier reads a caller's trace context (traceparent, tracestate)
// from the transport's headers.
type headerCarrier func(string) string

func (h headerCarrier) Get(key string) string {
	if h == nil {
		return ""
	}
	return h(key)
}
func (headerCarrier) Set(string, string) {}
func (headerCarrier) Keys() []string     { return nil }

// startSpan starts the server span of one JSON-RPC call, continuing the
// caller's trace when its request carries a traceparent; end closes it
// with the call's outcome. Without tracing it changes nothing.
func (h *Root) startSpan(ctx context.Context, method string) (context.Context, func(error)) {
	if h.tracer == nil {
		return ctx, func(error) {}
	}
	ctx = propagation.TraceContext{}.Extract(ctx, headerCarrier(jsonrpc.TransportFrom(ctx).Header))
	ctx, span := h.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("rpc.system", "jsonrpc"), attribute.String("rpc.method", method)))
	return ctx, func(err error) {
		if err != nil {
			fe := fault.From(err)
			span.SetAttributes(attribute.Int("rpc.jsonrpc.error_code", fe.Kind.Code()), attribute.String("skillhost.reason", fe.WireReason()))
			span.SetStatus(codes.Error, fe.WireReason())
		}
		span.End()
	}
}
