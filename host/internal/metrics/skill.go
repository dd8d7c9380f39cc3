package metrics

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skillhost/skillhost/host/fault"
)

// SkillMetrics are one loaded skill's series, resolved once, and its
// recent history.
type SkillMetrics struct {
	plugin, skill string
	calls         prometheus.Counter
	duration      prometheus.Observer
	errors        *prometheus.CounterVec
	limited       *prometheus.CounterVec
	history       history
}

// Observe records one call of the skill that took d and failed with reason
// ("" on success).
func (s *SkillMetrics) Observe(d time.Duration, reason string) {
	s.calls.Inc()
	s.duration.Observe(d.Seconds())
	if reason != "" {
		s.errors.WithLabelValues(s.plugin, s.skill, reason).Inc()
	}
	s.history.add(time.Now(), d, reason != "", reason == fault.ReasonRateLimited)
}

// RateLimited counts a call of the skill refused by the policy.skill_rates
// rule whose glob is rule, per "key" or "all" (Observe counts the call
// too). Rules come from the configuration, so the series stay bounded.
func (s *SkillMetrics) RateLimited(rule, per string) {
	s.limited.WithLabelValues(s.plugin, s.skill, rule, per).Inc()
}

// skillKey names a skill of a plugin.
type skillKey struct{ plugin, skill string }

// skillSet caches SkillMetrics: an immutable map read without locks,
// copied on the rare miss (a skill's first call).
type skillSet struct {
	m    *Metrics
	mu   sync.Mutex // serializes copies
	byID atomic.Pointer[map[skillKey]*SkillMetrics]
}

// Skill returns the series of a loaded skill. plugin and skill must come
// from a loaded manifest (never from a client) to keep the series bounded.
func (m *Metrics) Skill(plugin, skill string) *SkillMetrics {
	k := skillKey{plugin, skill}
	if cur := m.skills.byID.Load(); cur != nil {
		if s, ok := (*cur)[k]; ok {
			return s
		}
	}
	return m.skills.add(k)
}

func (ss *skillSet) add(k skillKey) *SkillMetrics {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	next := map[skillKey]*SkillMetrics{}
	if cur := ss.byID.Load(); cur != nil {
		if s, ok := (*cur)[k]; ok {
			return s
		}
		for key, s := range *cur {
			next[key] = s
		}
	}
	s := &SkillMetrics{plugin: k.plugin, skill: k.skill, errors: ss.m.skillErrors, limited: ss.m.skillLimited,
		calls: ss.m.skillCalls.WithLabelValues(k.plugin, k.skill), duration: ss.m.skillDuration.WithLabelValues(k.plugin, k.skill)}
	next[k] = s
	ss.byID.Store(&next)
	return s
}

// Retain drops the series of every skill for which loaded is false (its
// plugin was unloaded or no longer has it), so that removed skills do not
// linger.
func (m *Metrics) Retain(loaded func(plugin, skill string) bool) {
	ss := &m.skills
	ss.mu.Lock()
	defer ss.mu.Unlock()
	cur := ss.byID.Load()
	if cur == nil {
		return
	}
	next := map[skillKey]*SkillMetrics{}
	for k, s := range *cur {
		if loaded(k.plugin, k.skill) {
			next[k] = s
			continue
		}
		m.skillCalls.DeleteLabelValues(k.plugin, k.skill)
		m.skillDuration.DeleteLabelValues(k.plugin, k.skill)
		m.skillErrors.DeletePartialMatch(prometheus.Labels{"plugin": k.plugin, "skill": k.skill})
		m.skillLimited.DeletePartialMatch(prometheus.Labels{"plugin": k.plugin, "skill": k.skill})
	}
	ss.byID.Store(&next)
}

// SkillTotal is what the metrics hold about one skill since the host
// started (or since its plugin was loaded again after an unload).
type SkillTotal struct {
	Plugin  string            `json:"plugin"`
	Skill   string            `json:"skill"`
	Calls   uint64            `json:"calls"`
	Errors  map[string]uint64 `json:"errors"`  // by reason
	Seconds float64           `json:"seconds"` // summed latency
}

// SkillTotals reads every skill's counters, sorted by plugin and skill.
func (m *Metrics) SkillTotals() []SkillTotal {
	byKey := map[skillKey]*SkillTotal{}
	get := func(labels []*dto.LabelPair) *SkillTotal {
		var k skillKey
		for _, l := range labels {
			switch l.GetName() {
			case "plugin":
				k.plugin = l.GetValue()
			case "skill":
				k.skill = l.GetValue()
			}
		}
		t := byKey[k]
		if t == nil {
			t = &SkillTotal{Plugin: k.plugin, Skill: k.skill, Errors: map[string]uint64{}}
			byKey[k] = t
		}
		return t
	}
	collect(m.skillCalls, func(d *dto.Metric) { get(d.GetLabel()).Calls = uint64(d.GetCounter().GetValue()) })
	collect(m.skillDuration, func(d *dto.Metric) { get(d.GetLabel()).Seconds = d.GetHistogram().GetSampleSum() })
	collect(m.skillErrors, func(d *dto.Metric) {
		t := get(d.GetLabel())
		for _, l := range d.GetLabel() {
			if l.GetName() == "reason" {
				t.Errors[l.GetValue()] = uint64(d.GetCounter().GetValue())
			}
		}
	})
	out := make([]SkillTotal, 0, len(byKey))
	for _, t := range byKey {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Plugin != out[j].Plugin {
			return out[i].Plugin < out[j].Plugin
		}
		return out[i].Skill < out[j].Skill
	})
	return out
}

// collect hands each metric of c to f, decoded.
func collect(c prometheus.Collector, f func(*dto.Metric)) {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	for pm := range ch {
		var d dto.Metric
		if pm.Write(&d) == nil {
			f(&d)
		}
	}
}
