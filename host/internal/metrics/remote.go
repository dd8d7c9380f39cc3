package metrics

import (
	"sort"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// breakerStates are the values of skillhost_remote_breaker_state.
var breakerStates = map[string]float64{"closed": 0, "half-open": 1, "open": 2}

// Remote counts calls to remote agents (agents.remote): attempts by outcome,
// breaker transitions, fallbacks, and reads each breaker's state at scrape
// time. Its labels are the configured agent ids, so their number is bounded
// by the configuration. It implements remote.Observer and agents.Observer
// and is safe for concurrent use.
type Remote struct {
	attempts    *prometheus.CounterVec
	transitions *prometheus.CounterVec
	fallbacks   *prometheus.CounterVec
	states      atomic.Pointer[func() map[string]string]
	stateDesc   *prometheus.Desc
}

// NewRemote registers the remote-agent collectors on reg.
func NewRemote(reg prometheus.Registerer) *Remote {
	r := &Remote{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_remote_attempts_total",
			Help: "Attempts at remote agents by outcome (success, retryable, unusable, answered_error, caller_gone, circuit_open).",
		}, []string{"agent", "outcome"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_remote_breaker_transitions_total",
			Help: "Circuit breaker state changes of each remote agent, by the state entered.",
		}, []string{"agent", "to"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillhost_remote_fallbacks_total",
			Help: "Agent calls answered by a fallback agent, by the agent called and the fallback that answered.",
		}, []string{"agent", "fallback"}),
		stateDesc: prometheus.NewDesc("skillhost_remote_breaker_state",
			"Circuit breaker state of each remote agent on this host: 0 closed, 1 half-open, 2 open.", []string{"agent"}, nil),
	}
	reg.MustRegister(r.attempts, r.transitions, r.fallbacks, r)
	return r
}

// Attempt counts one attempt.
func (r *Remote) Attempt(agent, outcome string) { r.attempts.WithLabelValues(agent, outcome).Inc() }

// BreakerState counts a breaker entering state.
func (r *Remote) BreakerState(agent, state string) { r.transitions.WithLabelValues(agent, state).Inc() }

// Fallback counts a call answered by a fallback.
func (r *Remote) Fallback(agent, to string) { r.fallbacks.WithLabelValues(agent, to).Inc() }

// WatchBreakers sets where skillhost_remote_breaker_state reads the state
// of every breaker (agent id -> closed, half-open, open) at scrape time.
func (r *Remote) WatchBreakers(states func() map[string]string) { r.states.Store(&states) }

// Describe implements prometheus.Collector for the breaker state gauge.
func (r *Remote) Describe(ch chan<- *prometheus.Desc) { ch <- r.stateDesc }

// Collect implements prometheus.Collector for the breaker state gauge.
func (r *Remote) Collect(ch chan<- prometheus.Metric) {
	f := r.states.Load()
	if f == nil {
		return
	}
	states := (*f)()
	agents := make([]string, 0, len(states))
	for a := range states {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	for _, a := range agents {
		ch <- prometheus.MustNewConstMetric(r.stateDesc, prometheus.GaugeValue, breakerStates[states[a]], a)
	}
}
