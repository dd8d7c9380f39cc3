// Package metrics owns the host's Prometheus registry: JSON-RPC calls by
// method and outcome, their latency, and sandbox gauges read at scrape time.
//
//	m := metrics.New()
//	svc.Register(engine, m.Middleware)
//	http.Handle("/metrics", m.Handler())
//
// A Metrics is safe for concurrent use.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Metrics holds the collectors.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// New creates the registry with Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_rpc_calls_total",
			Help: "JSON-RPC calls by method, error code (0 = success) and reason.",
		}, []string{"method", "code", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skillhost_rpc_duration_seconds",
			Help:    "JSON-RPC handler latency by method.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
		}, []string{"method"}),
	}
	m.reg.MustRegister(m.calls, m.duration, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the underlying registry, for extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Middleware records every call of a handler; it fits rpc.Middleware.
func (m *Metrics) Middleware(method string, h jsonrpc.Handler) jsonrpc.Handler {
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		start := time.Now()
		res, err := h(ctx, req)
		m.duration.WithLabelValues(method).Observe(time.Since(start).Seconds())
		code, reason := "0", ""
		if err != nil {
			fe := fault.From(err)
			code, reason = strconv.Itoa(fe.Kind.Code()), fe.WireReason()
		}
		m.calls.WithLabelValues(method, code, reason).Inc()
		return res, err
	}
}

// GaugeFunc registers a gauge read at scrape time.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}
