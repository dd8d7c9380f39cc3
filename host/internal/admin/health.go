package admin

import (
	"fmt"
	"strings"

	"github.com/skillhost/skillhost/host/internal/plugin"
)

// Host health values of StatusDoc.Health.
const (
	HealthHealthy   = "healthy"
	HealthDegraded  = "degraded"  // serving, but a plugin failed, cannot start, or its newest revision was refused
	HealthUnhealthy = "unhealthy" // the state store is unreachable
)

// Problem is a plugin folder that needs an operator: one that failed to
// load, a loaded one that has not started an instance, or one whose newest
// revision (or OCI pull) was refused while an older revision serves.
type Problem struct {
	Plugin  string `json:"plugin"`
	State   string `json:"state"`
	Message string `json:"message"`
}

// notReady says why a loaded plugin has not become ready: no instance of
// it has started since it loaded (its min_instances found no room in the
// sandbox memory budget once its code was in, and its calls none either).
// "" when it is ready, or when it has simply not been needed yet (instances
// come on demand).
func notReady(p plugin.Pool) string {
	st := p.Stats
	switch {
	case st.InstancesCreated > 0:
		return ""
	case st.PoolSaturated > 0:
		return fmt.Sprintf("no instance has started since it loaded: %d call(s) refused with pool_saturated "+
			"(no room in the sandbox memory budget, sandbox.max_live_bytes, or all instances busy)", st.PoolSaturated)
	case st.Failures > 0:
		return fmt.Sprintf("no instance has started since it loaded: %d call(s) failed before one did", st.Failures)
	case p.Plugin.Limits.MinInstances > 0 && st.CodeLoads > 0 && st.Compiling == 0:
		return "its min_instances could not start: the sandbox memory budget (sandbox.max_live_bytes) has no room for them; calls wait policy.queue_wait for room, then fail with pool_saturated"
	}
	return ""
}

// notReadyByDir maps the folder of each loaded plugin that is not ready to
// why.
func (a *Admin) notReadyByDir() map[string]string {
	out := map[string]string{}
	for _, p := range a.d.Registry.Pools() {
		if why := notReady(p); why != "" {
			out[p.Plugin.Dir] = why
		}
	}
	return out
}

// problems lists the plugin folders that need an operator, in the order
// of doc (by name).
func problems(doc PluginsDoc) []Problem {
	out := []Problem{}
	for _, p := range doc.Plugins {
		if p.State == StateFailed || p.State == StateNotReady || p.Error != "" {
			out = append(out, Problem{Plugin: p.Name, State: p.State, Message: p.Error})
		}
	}
	return out
}

// health sets doc's health from the state store's and the plugins': unhealthy
// while the store is unreachable, else degraded while a plugin has a
// problem, else healthy.
func (a *Admin) health(doc *StatusDoc, plugins PluginsDoc) {
	doc.Health, doc.Problems = HealthHealthy, problems(plugins)
	if a.d.Ready != nil {
		if err := a.d.Ready(); err != nil {
			doc.Health, doc.HealthError = HealthUnhealthy, err.Error()
			return
		}
	}
	if len(doc.Problems) == 0 {
		return
	}
	names := make([]string, 0, len(doc.Problems))
	for _, p := range doc.Problems {
		state := p.State
		if state == StateLoaded || state == StateReloading {
			state = "newest revision refused"
		}
		names = append(names, p.Plugin+" ("+strings.ReplaceAll(state, "_", " ")+")")
	}
	doc.Health = HealthDegraded
	doc.HealthError = fmt.Sprintf("%d plugin(s) need attention: %s", len(names), strings.Join(names, ", "))
}
