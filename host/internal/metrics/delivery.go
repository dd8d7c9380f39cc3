package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Deliveries counts the outbound deliveries (A2A push notifications, plan
// webhooks): how they ended, each attempt, the ones dropped because their
// key (or the host) had too many waiting, and reads how many wait at scrape
// time. Its kind label takes the values given to NewDeliveries (host
// constants), so the series are bounded. It implements delivery.Observer
// and is safe for concurrent use.
type Deliveries struct {
	kinds    []string
	ended    *prometheus.CounterVec
	dropped  *prometheus.CounterVec
	attempts *prometheus.CounterVec
	pending  atomic.Pointer[func() map[string]int]
	desc     *prometheus.Desc
}

// NewDeliveries registers the delivery collectors on reg, with a series
// for each of kinds from the start.
func NewDeliveries(reg prometheus.Registerer, kinds ...string) *Deliveries {
	d := &Deliveries{
		kinds: kinds,
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_deliveries_total",
			Help: "Outbound deliveries (push notifications, plan webhooks) that ended, by kind and outcome (delivered, failed).",
		}, []string{"kind", "outcome"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_deliveries_dropped_total",
			Help: "Outbound deliveries dropped before they were delivered because their key, or the host, had too many waiting, by kind.",
		}, []string{"kind"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_delivery_attempts_total",
			Help: "POSTs of outbound deliveries by kind and result (ok, retry: tried again later, final: failed for good).",
		}, []string{"kind", "result"}),
		desc: prometheus.NewDesc("skillhost_deliveries_pending",
			"Outbound deliveries waiting on this host (running and waiting for a retry included), by kind.", []string{"kind"}, nil),
	}
	for _, k := range kinds {
		d.ended.WithLabelValues(k, "delivered")
		d.ended.WithLabelValues(k, "failed")
		d.dropped.WithLabelValues(k)
		for _, r := range []string{"ok", "retry", "final"} {
			d.attempts.WithLabelValues(k, r)
		}
	}
	reg.MustRegister(d.ended, d.dropped, d.attempts, d)
	return d
}

// Finished counts a delivery that ended (outcome delivered, failed or
// dropped).
func (d *Deliveries) Finished(kind, outcome string) {
	if outcome == "dropped" {
		d.dropped.WithLabelValues(kind).Inc()
		return
	}
	d.ended.WithLabelValues(kind, outcome).Inc()
}

// Attempted counts one POST.
func (d *Deliveries) Attempted(kind, result string) { d.attempts.WithLabelValues(kind, result).Inc() }

// WatchPending sets where skillhost_deliveries_pending reads the waiting
// deliveries by kind at scrape time (delivery.Service.Pending).
func (d *Deliveries) WatchPending(pending func() map[string]int) { d.pending.Store(&pending) }

// Describe implements prometheus.Collector for the pending gauge.
func (d *Deliveries) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

// Collect implements prometheus.Collector for the pending gauge: one
// series per kind given to NewDeliveries.
func (d *Deliveries) Collect(ch chan<- prometheus.Metric) {
	var pending map[string]int
	if f := d.pending.Load(); f != nil {
		pending = (*f)()
	}
	for _, k := range d.kinds {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(pending[k]), k)
	}
}
