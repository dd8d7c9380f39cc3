// Package metrics owns the host's Prometheus registry: JSON-RPC calls by
// method and outcome, skill calls by plugin, skill and reason, their
// latency and a 15-minute history of them (History, for the dashboard's
// charts), skill rate-limit refusals, plugin reload events, state store latency, HTTP requests by
// route and status, and gauges read at scrape time (the sandbox pools, the
// memory budget, the compilation cache). The README lists every metric (a
// host test compares the list with what /metrics exposes).
//
//	m := metrics.New()
//	rpc := m.Method("_cleveragents/skill/execute") // pre-resolved: no label lookup per call
//	rpc.Observe(d, err)
//	m.Skill("text-tools", "uppercase").Observe(d, "")
//	http.Handle("/metrics", m.Handler())
//
// Label values come from the host (method names it registered, plugin and
// skill ids of loaded manifests, fault reasons), never from client input,
// so the number of series stays bounded. A Metrics is safe for concurrent
// use.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Metrics holds the collectors.
type Metrics struct {
	reg           *prometheus.Registry
	calls         *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	skillCalls    *prometheus.CounterVec
	skillErrors   *prometheus.CounterVec
	skillDuration *prometheus.HistogramVec
	skillLimited  *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	reloads       *prometheus.CounterVec
	store         *prometheus.HistogramVec
	http          *prometheus.CounterVec
	httpSeries    sync.Map // httpKey → prometheus.Counter: resolved once per route and status
	skills        skillSet
}

// httpKey names one series of the HTTP request counter.
type httpKey struct {
	route  string
	status int
}

// latencyBuckets span 100µs to ~26s (×4 each).
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 4, 10)

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
			Buckets: latencyBuckets,
		}, []string{"method"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_rpc_rejected_total",
			Help: "JSON-RPC requests refused before a method ran (malformed, oversized, unknown method, bad envelope), by reason.",
		}, []string{"reason"}),
		skillCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_skill_calls_total",
			Help: "Calls of a loaded skill (every transport, A2A tasks and plan steps), by plugin and skill.",
		}, []string{"plugin", "skill"}),
		skillErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_skill_errors_total",
			Help: "Failed calls of a loaded skill by plugin, skill and reason (timeout, memory_limit, trap, …).",
		}, []string{"plugin", "skill", "reason"}),
		skillDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skillhost_skill_duration_seconds",
			Help:    "Skill call latency (schema checks, queueing for an instance and the sandbox call) by plugin and skill.",
			Buckets: latencyBuckets,
		}, []string{"plugin", "skill"}),
		skillLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_skill_rate_limited_total",
			Help: "Calls of a loaded skill refused by a policy.skill_rates rule, by plugin, skill, the rule's skill glob and per (key or all).",
		}, []string{"plugin", "skill", "rule", "per"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_plugin_reloads_total",
			Help: "Plugin load events by plugin and event (compiling, loaded, replaced, unloaded, failed, cleared).",
		}, []string{"plugin", "event"}),
		store: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skillhost_store_duration_seconds",
			Help:    "Latency of the session and context operations of the state store, by operation.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"op"}),
		http: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_http_requests_total",
			Help: "HTTP requests by route (as registered, or unmatched) and status, those refused before routing too.",
		}, []string{"route", "status"}),
	}
	m.skills.m = m
	m.reg.MustRegister(m.calls, m.duration, m.rejected, m.skillCalls, m.skillErrors, m.skillDuration, m.skillLimited, m.reloads, m.store, m.http,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is the underlying registry, for extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// MethodMetrics are one JSON-RPC method's series, resolved once.
type MethodMetrics struct {
	method   string
	ok       prometheus.Counter
	duration prometheus.Observer
	calls    *prometheus.CounterVec
}

// Method returns the series of a registered method.
func (m *Metrics) Method(method string) *MethodMetrics {
	return &MethodMetrics{method: method, ok: m.calls.WithLabelValues(method, "0", ""),
		duration: m.duration.WithLabelValues(method), calls: m.calls}
}

// Observe records one call that took d and ended with err (nil: success).
func (mm *MethodMetrics) Observe(d time.Duration, err error) {
	mm.duration.Observe(d.Seconds())
	if err == nil {
		mm.ok.Inc()
		return
	}
	fe := fault.From(err)
	mm.calls.WithLabelValues(mm.method, strconv.Itoa(fe.Kind.Code()), fe.WireReason()).Inc()
}

// Middleware records every call of a handler; it fits
// jsonrpc.WithMiddleware.
func (m *Metrics) Middleware(method string, h jsonrpc.Handler) jsonrpc.Handler {
	mm := m.Method(method)
	return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		start := time.Now()
		res, err := h(ctx, req)
		mm.Observe(time.Since(start), err)
		return res, err
	}
}

// Rejected counts a request refused before a method ran. Its method is
// not a label: it comes from the client.
func (m *Metrics) Rejected(err error) { m.rejected.WithLabelValues(fault.From(err).WireReason()).Inc() }

// HTTPRequest counts one answered HTTP request. route must be a
// registered route (or "unmatched"), never the client's path.
func (m *Metrics) HTTPRequest(route string, status int) {
	k := httpKey{route, status}
	c, ok := m.httpSeries.Load(k)
	if !ok { // routes are registered paths and statuses a few: the map stays small
		c, _ = m.httpSeries.LoadOrStore(k, m.http.WithLabelValues(route, strconv.Itoa(status)))
	}
	c.(prometheus.Counter).Inc()
}

// PluginEvent counts a plugin load event.
func (m *Metrics) PluginEvent(plugin, event string) { m.reloads.WithLabelValues(plugin, event).Inc() }

// Timer is one latency series, resolved once.
type Timer struct{ o prometheus.Observer }

// Since records the time elapsed since start.
func (t Timer) Since(start time.Time) { t.o.Observe(time.Since(start).Seconds()) }

// StoreOp returns the latency series of a state store operation.
func (m *Metrics) StoreOp(op string) Timer { return Timer{m.store.WithLabelValues(op)} }

// GaugeFunc registers a gauge read at scrape time.
func (m *Metrics) GaugeFunc(name, help string, f func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f))
}
