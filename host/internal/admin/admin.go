package admin

import (
	"time"

	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// Deps are what an Admin reads.
type Deps struct {
	Registry *plugin.Registry
	Runtime  *sandbox.Runtime
	Metrics  *metrics.Metrics
	Failures *Ring
	// Version is the host's version. Optional.
	Version string
	// Started is when the host started. Optional. Default: New's time.
	Started time.Time
	// PublishedDir is where published plugins are unpacked; plugins under
	// it are reported with source "published". Optional.
	PublishedDir string
	// Ready reports the state store's health (nil: healthy). Optional.
	Ready func() error
	// OCIDir is where the plugins of sources.oci are pulled; plugins under
	// it are reported with source "oci". Optional.
	OCIDir string
	// Sources report each sources.oci entry as it stands. Optional.
	Sources func() []SourceState
	// Settings report what operators may see of a plugin's plugins.<name>
	// settings: its config keys and, per secret, "set" or "unset" — never
	// a value. Optional.
	Settings func(plugin string) (configKeys []string, secrets map[string]string)
}

// Admin builds the admin documents.
type Admin struct{ d Deps }

// New returns an Admin reading d.
func New(d Deps) *Admin {
	if d.Started.IsZero() {
		d.Started = time.Now()
	}
	return &Admin{d: d}
}

// PoolDoc is GET /admin/pool: the sandbox runtime and each plugin's pool.
type PoolDoc struct {
	// BudgetBytes is sandbox.max_live_bytes; ReservedBytes what live
	// instances and running calls hold of it, counted at their worst case.
	BudgetBytes   uint64 `json:"budget_bytes"`
	ReservedBytes uint64 `json:"reserved_bytes"`
	// Instances: live = idle + busy; discarded counts instances closed
	// after a timeout, trap or memory failure (or at unload) since start.
	Instances    InstanceCounts `json:"instances"`
	CallsRunning uint64         `json:"calls_running"`
	// CompileCache counts compilations served by the on-disk cache (hits)
	// and those that compiled (misses).
	CompileCache CompileCounts `json:"compile_cache"`
	// Code is the compiled plugin code held in memory.
	Code CodeView `json:"code"`
	// Compiles are the compile workers and the compiles running and queued.
	Compiles CompilesView `json:"compiles"`
	Plugins  []PoolView   `json:"plugins"`
}

// CodeView is the compiled code resident in memory, against
// sandbox.max_code_bytes.
type CodeView struct {
	// ResidentBytes estimates the code held now (about six times the
	// modules' size), by Plugins plugins; BudgetBytes is sandbox.max_code_bytes.
	ResidentBytes uint64 `json:"resident_bytes"`
	BudgetBytes   uint64 `json:"budget_bytes"`
	Plugins       uint64 `json:"plugins"`
	// Loads counts compiles (first compiles and code loaded again after a
	// release), Releases the code released (idle, over the budget,
	// unloaded), Evictions those forced by the budget.
	Loads     uint64 `json:"loads"`
	Releases  uint64 `json:"releases"`
	Evictions uint64 `json:"evictions"`
}

// CompilesView are sandbox.compile_workers and the compiles in progress.
type CompilesView struct {
	Workers int    `json:"workers"`
	Running uint64 `json:"running"`
	Queued  uint64 `json:"queued"`
}

// InstanceCounts are sandbox instances by state. Discarded counts those
// closed after a failure (or at unload), Released those closed idle.
type InstanceCounts struct {
	Live      uint64 `json:"live"`
	Idle      uint64 `json:"idle"`
	Busy      uint64 `json:"busy"`
	Discarded uint64 `json:"discarded"`
	Released  uint64 `json:"released"`
}

func instanceCounts(st sandbox.Stats) InstanceCounts {
	return InstanceCounts{Live: st.InstancesLive, Idle: st.InstancesIdle,
		Busy: st.InstancesLive - min(st.InstancesIdle, st.InstancesLive), Discarded: st.InstancesDiscarded,
		Released: st.InstancesReleased}
}

// CompileCounts are compilations by result.
type CompileCounts struct {
	Hits   uint64 `json:"hits"`
	Misses uint64 `json:"misses"`
}

// PoolView is one loaded plugin's pool.
type PoolView struct {
	Plugin    string         `json:"plugin"`
	Version   string         `json:"version"`
	Instances InstanceCounts `json:"instances"`
	// Concurrency caps busy instances; Saturated counts calls refused
	// with pool_saturated.
	Concurrency int    `json:"concurrency"`
	Saturated   uint64 `json:"pool_saturated"`
	Calls       uint64 `json:"calls"`
	Failures    uint64 `json:"failures"`
	// MemoryPeakBytes is the high-water mark of an instance's linear
	// memory; MemoryLimitBytes the plugin's limits.memory.
	MemoryPeakBytes  uint64 `json:"memory_peak_bytes"`
	MemoryLimitBytes uint64 `json:"memory_limit_bytes"`
	// MinInstances are kept warm (limits.min_instances).
	MinInstances int `json:"min_instances"`
	// CodeResident tells whether the plugin's compiled code is in memory
	// (CodeBytes, estimated), Compiling whether it compiles now.
	CodeResident bool   `json:"code_resident"`
	CodeBytes    uint64 `json:"code_bytes"`
	Compiling    bool   `json:"compiling"`
	CodeLoads    uint64 `json:"code_loads"`
	// LastUsed is when its last call ended (or its code came in).
	LastUsed time.Time `json:"last_used"`
}

// Pool reads the runtime and every plugin's pool.
func (a *Admin) Pool() PoolDoc {
	rs := a.d.Runtime.Stats()
	doc := PoolDoc{
		BudgetBytes: rs.BudgetBytes, ReservedBytes: rs.ReservedBytes, CallsRunning: rs.CallsRunning,
		Instances:    instanceCounts(rs),
		CompileCache: CompileCounts{Hits: rs.CompileHits, Misses: rs.CompileMisses},
		Code: CodeView{ResidentBytes: rs.CodeBytes, BudgetBytes: rs.CodeBudgetBytes, Plugins: rs.CodeModules,
			Loads: rs.CodeLoads, Releases: rs.CodeReleases, Evictions: rs.CodeEvictions},
		Compiles: CompilesView{Workers: rs.CompileWorkers, Running: rs.CompilesRunning, Queued: rs.CompilesQueued},
		Plugins:  []PoolView{},
	}
	for _, p := range a.d.Registry.Pools() {
		st := p.Stats
		doc.Plugins = append(doc.Plugins, PoolView{
			Plugin: p.Plugin.Manifest.Name, Version: p.Plugin.Manifest.Version,
			Instances:   instanceCounts(st),
			Concurrency: p.Plugin.Limits.Concurrency, Saturated: st.PoolSaturated, Calls: st.Calls, Failures: st.Failures,
			MemoryPeakBytes: st.MemoryPeakBytes, MemoryLimitBytes: p.Plugin.Limits.MemoryBytes,
			MinInstances: p.Plugin.Limits.MinInstances, CodeResident: st.CodeModules > 0, CodeBytes: st.CodeBytes,
			Compiling: st.Compiling > 0, CodeLoads: st.CodeLoads, LastUsed: st.LastUsed.UTC(),
		})
	}
	return doc
}

// FailuresDoc is GET /admin/failures.
type FailuresDoc struct {
	Total    uint64    `json:"total"`    // failures since start, kept or not
	Capacity int       `json:"capacity"` // how many are kept
	Failures []Failure `json:"failures"` // newest first
}

// Failures lists the kept failures, newest first.
func (a *Admin) Failures() FailuresDoc {
	return FailuresDoc{Total: a.d.Failures.Total(), Capacity: a.d.Failures.Size(), Failures: a.d.Failures.List(0)}
}

// StatusDoc is GET /admin/status: what `skillhost status` and the
// dashboard show at a glance.
type StatusDoc struct {
	Version       string    `json:"version"`
	Time          time.Time `json:"time"`
	UptimeSeconds int64     `json:"uptime_seconds"`
	// Health is "healthy"; "degraded" while a plugin needs an operator
	// (Problems); "unhealthy" while the state store is unreachable.
	// HealthError says why it is not healthy.
	Health      string `json:"health"`
	HealthError string `json:"health_error,omitempty"`
	// Problems are the plugin folders that need an operator (health.go).
	Problems []Problem `json:"problems"`
	Revision uint64    `json:"revision"`
	// Plugins counts plugin folders by state (loaded, not_ready,
	// reloading, loading, failed).
	Plugins map[string]int `json:"plugins"`
	Pool    PoolDoc        `json:"pool"`
	// Skills are every skill's counters since start (calls, errors by
	// reason, summed latency); rates come from two readings.
	Skills   []metrics.SkillTotal `json:"skills"`
	Failures FailuresDoc          `json:"recent_failures"` // the newest few
}

// statusFailures is how many failures Status includes.
const statusFailures = 20

// Status reads everything at a glance.
func (a *Admin) Status() StatusDoc {
	now := time.Now()
	doc := StatusDoc{Version: a.d.Version, Time: now.UTC(), UptimeSeconds: int64(now.Sub(a.d.Started).Seconds()),
		Plugins: map[string]int{StateLoaded: 0, StateNotReady: 0, StateReloading: 0, StateLoading: 0, StateFailed: 0},
		Pool:    a.Pool(), Skills: a.d.Metrics.SkillTotals()}
	plugins := a.Plugins()
	a.health(&doc, plugins)
	doc.Revision = plugins.Revision
	for _, p := range plugins.Plugins {
		doc.Plugins[p.State]++
	}
	doc.Failures = FailuresDoc{Total: a.d.Failures.Total(), Capacity: a.d.Failures.Size(), Failures: a.d.Failures.List(statusFailures)}
	return doc
}

// Metrics adapts the registry and runtime to the scrape-time metrics.
func (a *Admin) Metrics() metrics.Source { return scrape{a} }

type scrape struct{ a *Admin }

func (s scrape) Pools() []metrics.Pool {
	var out []metrics.Pool
	for _, p := range s.a.d.Registry.Pools() {
		st := p.Stats
		out = append(out, metrics.Pool{Plugin: p.Plugin.Manifest.Name, Version: p.Plugin.Manifest.Version,
			Idle: st.InstancesIdle, Busy: st.InstancesLive - min(st.InstancesIdle, st.InstancesLive),
			Discarded: st.InstancesDiscarded, Saturated: st.PoolSaturated,
			MemoryPeakBytes: st.MemoryPeakBytes, MemoryLimitBytes: p.Plugin.Limits.MemoryBytes})
	}
	return out
}

func (s scrape) Host() metrics.Host {
	rs := s.a.d.Runtime.Stats()
	snap := s.a.d.Registry.Snapshot()
	return metrics.Host{Plugins: len(snap.Plugins), Problems: len(snap.Problems), Loading: len(s.a.d.Registry.Loading()),
		CallsRunning: rs.CallsRunning, InstancesLive: rs.InstancesLive, InstancesIdle: rs.InstancesIdle,
		BudgetBytes: rs.BudgetBytes, ReservedBytes: rs.ReservedBytes, CompileHits: rs.CompileHits, CompileMisses: rs.CompileMisses}
}
