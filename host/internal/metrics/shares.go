package metrics

import "github.com/prometheus/client_golang/prometheus"

// Share is one counted shared resource (an open stream, session,
// connection or running call), read at scrape time.
type Share struct {
	// Resource names it: http_connections, http_reserve, events_streams,
	// task_streams, mcp_sessions, running_calls.
	Resource string
	// InUse is what is held on the host now; Limit its host-wide cap.
	InUse, Limit int
	// RefusedFull counts refusals at Limit, RefusedShare those at a
	// holder's (a key's, a client address's) share.
	RefusedFull, RefusedShare uint64
}

var (
	descShareInUse   = desc("skillhost_share_in_use", "Units of a shared resource held on this host now, by resource.", "resource")
	descShareLimit   = desc("skillhost_share_limit", "The host-wide cap of a shared resource, by resource.", "resource")
	descShareRefused = desc("skillhost_share_refused_total", "Refusals of a shared resource by resource and cap: host (the host-wide cap) or share (a key's or client address's share).", "resource", "cap")
)

// WatchShares registers the scrape-time metrics of the shared resources
// that shares lists (once).
func (m *Metrics) WatchShares(shares func() []Share) { m.reg.MustRegister(shareCollector(shares)) }

type shareCollector func() []Share

func (c shareCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descShareInUse
	ch <- descShareLimit
	ch <- descShareRefused
}

func (c shareCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c() {
		ch <- prometheus.MustNewConstMetric(descShareInUse, prometheus.GaugeValue, float64(s.InUse), s.Resource)
		ch <- prometheus.MustNewConstMetric(descShareLimit, prometheus.GaugeValue, float64(s.Limit), s.Resource)
		ch <- prometheus.MustNewConstMetric(descShareRefused, prometheus.CounterValue, float64(s.RefusedFull), s.Resource, "host")
		ch <- prometheus.MustNewConstMetric(descShareRefused, prometheus.CounterValue, float64(s.RefusedShare), s.Resource, "share")
	}
}
