package metrics

import "github.com/prometheus/client_golang/prometheus"

// Pool is one loaded plugin's sandbox pool, read at scrape time.
type Pool struct {
	Plugin, Version string
	// Idle instances wait for a call; Busy ones run one.
	Idle, Busy uint64
	// Discarded counts instances closed after a timeout, trap or memory
	// failure (or at unload); Saturated counts calls refused with
	// pool_saturated.
	Discarded, Saturated uint64
	// MemoryPeakBytes is the highest linear memory an instance reached;
	// MemoryLimitBytes the plugin's effective limits.memory.
	MemoryPeakBytes, MemoryLimitBytes uint64
}

// Host is the host-wide state read at scrape time.
type Host struct {
	Plugins, Problems, Loading int
	// The sandbox runtime: calls holding an instance, live and idle
	// instances, the memory budget (sandbox.max_live_bytes) and what is
	// reserved of it, and compilations served by the on-disk cache or not.
	CallsRunning, InstancesLive, InstancesIdle uint64
	BudgetBytes, ReservedBytes                 uint64
	CompileHits, CompileMisses                 uint64
}

// Source is what the scrape-time metrics read.
type Source interface {
	Pools() []Pool
	Host() Host
}

// Watch registers the scrape-time metrics of src (once).
func (m *Metrics) Watch(src Source) { m.reg.MustRegister(&poolCollector{src: src}) }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	descPluginsLoaded    = desc("skillhost_plugins_loaded", "Plugins currently loaded.")
	descPluginProblems   = desc("skillhost_plugin_problems", "Plugin folders that failed to load (the revision before keeps serving, if any).")
	descPluginsLoading   = desc("skillhost_plugins_loading", "Plugin folders compiling now (hot reload).")
	descCallsRunning     = desc("skillhost_sandbox_calls_running", "Skill calls holding a sandbox instance now.")
	descInstancesLive    = desc("skillhost_sandbox_instances_live", "Sandbox instances alive (busy or idle).")
	descInstancesIdle    = desc("skillhost_sandbox_instances_idle", "Sandbox instances alive and free for a call.")
	descBudget           = desc("skillhost_sandbox_budget_bytes", "The sandbox memory budget (sandbox.max_live_bytes).")
	descReserved         = desc("skillhost_sandbox_reserved_bytes", "Sandbox budget held by live instances and running calls (worst case).")
	descCompiles         = desc("skillhost_sandbox_compiles_total", "Module compilations by result: hit (served by the on-disk compilation cache) or miss.", "result")
	descPluginInfo       = desc("skillhost_plugin_info", "1 for each loaded plugin, with its version.", "plugin", "version")
	descPluginInstances  = desc("skillhost_plugin_instances", "A plugin's live sandbox instances by state (idle, busy).", "plugin", "state")
	descPluginDiscarded  = desc("skillhost_plugin_instances_discarded_total", "A plugin's instances closed after a timeout, trap or memory failure (or at unload).", "plugin")
	descPluginSaturated  = desc("skillhost_plugin_pool_saturated_total", "A plugin's calls refused with pool_saturated.", "plugin")
	descPluginMemoryPeak = desc("skillhost_plugin_memory_peak_bytes", "The highest linear memory a plugin's instance reached (high-water mark).", "plugin")
	descPluginMemoryCap  = desc("skillhost_plugin_memory_limit_bytes", "A plugin's effective memory limit (limits.memory).", "plugin")
)

// poolCollector turns a Source into metrics at each scrape.
type poolCollector struct{ src Source }

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPluginsLoaded, descPluginProblems, descPluginsLoading, descCallsRunning,
		descInstancesLive, descInstancesIdle, descBudget, descReserved, descCompiles, descPluginInfo, descPluginInstances,
		descPluginDiscarded, descPluginSaturated, descPluginMemoryPeak, descPluginMemoryCap} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	h := c.src.Host()
	gauge(descPluginsLoaded, float64(h.Plugins))
	gauge(descPluginProblems, float64(h.Problems))
	gauge(descPluginsLoading, float64(h.Loading))
	gauge(descCallsRunning, float64(h.CallsRunning))
	gauge(descInstancesLive, float64(h.InstancesLive))
	gauge(descInstancesIdle, float64(h.InstancesIdle))
	gauge(descBudget, float64(h.BudgetBytes))
	gauge(descReserved, float64(h.ReservedBytes))
	counter(descCompiles, h.CompileHits, "hit")
	counter(descCompiles, h.CompileMisses, "miss")
	for _, p := range c.src.Pools() {
		gauge(descPluginInfo, 1, p.Plugin, p.Version)
		gauge(descPluginInstances, float64(p.Idle), p.Plugin, "idle")
		gauge(descPluginInstances, float64(p.Busy), p.Plugin, "busy")
		counter(descPluginDiscarded, p.Discarded, p.Plugin)
		counter(descPluginSaturated, p.Saturated, p.Plugin)
		gauge(descPluginMemoryPeak, float64(p.MemoryPeakBytes), p.Plugin)
		gauge(descPluginMemoryCap, float64(p.MemoryLimitBytes), p.Plugin)
	}
}
