package plugin

import (
	"context"
	"slices"
	"sort"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// Observer sees what a Registry does, for metrics, access logs and the
// admin endpoints. Its methods run on the caller's goroutine (a skill call,
// a reload): they must be quick and must not call back into the registry's
// loading methods (LoadDir, Load, Reload, Close).
type Observer interface {
	// SkillCalled reports a call that reached a loaded skill, after it
	// ended. Calls refused before (unknown skill or agent) are not
	// reported: their ids come from the client, not from a manifest.
	SkillCalled(ctx context.Context, r CallReport)
	// PluginEvent reports a load, reload, unload, problem or cleared
	// problem.
	PluginEvent(e LoadEvent)
}

// CallReport is one skill call as the registry saw it.
type CallReport struct {
	Plugin   *Plugin
	Skill    *Skill
	Duration time.Duration // from the skill's resolution to the end of the call
	// MemoryPeakBytes is the instance's linear memory high-water mark
	// (successful calls only).
	MemoryPeakBytes uint64
	Err             *fault.Error // nil on success
}

// LoadEventKind names what happened to a plugin folder.
type LoadEventKind string

// The load events, also the values of the reload metric's event label.
const (
	EventCompiling LoadEventKind = "compiling" // a folder's manifest is valid; its module compiles now
	EventLoaded    LoadEventKind = "loaded"    // a new plugin serves
	EventReplaced  LoadEventKind = "replaced"  // a new revision replaced the one serving
	EventUnloaded  LoadEventKind = "unloaded"  // the folder went away; its plugin no longer serves
	EventFailed    LoadEventKind = "failed"    // the folder did not load (a Problem)
	EventCleared   LoadEventKind = "cleared"   // a folder's problem is gone (it loads now, or was removed)
)

// LoadEvent is one event of a plugin folder.
type LoadEvent struct {
	Kind LoadEventKind
	Dir  string
	// Plugin and Version come from the manifest; a folder whose manifest
	// does not parse reports its folder name as Plugin.
	Plugin, Version string
	// Duration is how long compiling took (loaded, replaced, failed after
	// compiling started).
	Duration time.Duration
	Err      error // failed only
}

// Loading is a plugin folder whose module is compiling now. A folder being
// validated (or a replacement compiling while the old revision serves) is
// not serving yet: its skills answer plugin_loading. A new plugin serves
// while its module compiles in the background: calls wait for the compile
// within their deadline (then plugin_loading).
type Loading struct {
	Dir     string    `json:"dir"`
	Plugin  string    `json:"plugin"`
	Version string    `json:"version"`
	Skills  []string  `json:"skills"`
	Since   time.Time `json:"since"`
	// Replacing is true when an older revision keeps serving meanwhile.
	Replacing bool `json:"replacing"`
	// Registered is true for a plugin on the card whose module compiles in
	// the background (its load check).
	Registered bool `json:"registered"`
}

// Loading lists the plugin folders compiling now, sorted by folder.
func (r *Registry) Loading() []Loading {
	r.loadingMu.Lock()
	out := make([]Loading, 0, len(r.loading))
	seen := map[string]bool{}
	for _, l := range r.loading {
		out = append(out, l)
		seen[l.Dir] = true
	}
	r.loadingMu.Unlock()
	r.mu.RLock()
	st := r.cur
	r.mu.RUnlock()
	for dir, e := range st.byDir {
		since, checking := e.module.Checking()
		if !checking || seen[dir] {
			continue
		}
		m := e.plugin.Manifest
		l := Loading{Dir: dir, Plugin: m.Name, Version: m.Version, Since: since, Registered: true}
		for _, s := range m.Skills {
			l.Skills = append(l.Skills, s.ID)
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out
}

// loadingSkill returns the folder compiling a plugin named agent (when
// agent is set) or providing skill id, if any.
func (r *Registry) loadingSkill(agent, id string) (Loading, bool) {
	r.loadingMu.Lock()
	defer r.loadingMu.Unlock()
	for _, l := range r.loading {
		if agent != "" {
			if l.Plugin == agent {
				return l, true
			}
			continue
		}
		if slices.Contains(l.Skills, id) {
			return l, true
		}
	}
	return Loading{}, false
}

// startLoading records that m's module compiles now, logs it and reports
// the event.
func (r *Registry) startLoading(dir string, m *Manifest, replacing bool) {
	l := Loading{Dir: dir, Plugin: m.Name, Version: m.Version, Since: time.Now(), Replacing: replacing}
	for _, s := range m.Skills {
		l.Skills = append(l.Skills, s.ID)
	}
	r.loadingMu.Lock()
	r.loading[dir] = l
	r.loadingMu.Unlock()
	r.log.Info("plugin: compiling", "plugin", m.Name, "version", m.Version, "dir", dir, "replacing", replacing)
	r.event(LoadEvent{Kind: EventCompiling, Dir: dir, Plugin: m.Name, Version: m.Version})
}

// endLoading forgets dir's compile and returns how long it took.
func (r *Registry) endLoading(dir string) time.Duration {
	r.loadingMu.Lock()
	defer r.loadingMu.Unlock()
	l, ok := r.loading[dir]
	delete(r.loading, dir)
	if !ok {
		return 0
	}
	return time.Since(l.Since)
}

// loadingFault is the error of a call to a skill whose plugin is still
// compiling (it is not loaded yet, so it would otherwise be unknown).
func loadingFault(id string, l Loading) *fault.Error {
	return fault.Newf(fault.InvalidState, fault.ReasonPluginLoading,
		"skill %q is not available yet: plugin %q is compiling (for %s); retry shortly",
		id, l.Plugin, time.Since(l.Since).Round(time.Millisecond)).
		With("plugin", l.Plugin).With("skill_id", id)
}

func (r *Registry) event(e LoadEvent) {
	if r.opts.Observer != nil {
		r.opts.Observer.PluginEvent(e)
	}
}

// observe reports a finished call of a resolved skill.
func (r *Registry) observe(ctx context.Context, p *Plugin, sk *Skill, start time.Time, res *sandbox.Result, err *fault.Error) {
	if r.opts.Observer == nil {
		return
	}
	rep := CallReport{Plugin: p, Skill: sk, Duration: time.Since(start), Err: err}
	if res != nil {
		rep.MemoryPeakBytes = res.MemoryPeakBytes
	}
	r.opts.Observer.SkillCalled(ctx, rep)
}

// Pool is a loaded plugin with its sandbox pool's counters.
type Pool struct {
	Plugin *Plugin
	Stats  sandbox.Stats
}

// Pools reads the sandbox pool of every loaded plugin, sorted by name.
func (r *Registry) Pools() []Pool {
	r.mu.RLock()
	st := r.cur
	r.mu.RUnlock()
	out := make([]Pool, 0, len(st.snap.Plugins))
	for _, p := range st.snap.Plugins { // sorted by name
		out = append(out, Pool{Plugin: p, Stats: st.byName[p.Manifest.Name].module.Stats()})
	}
	return out
}

// startSpan starts the span of one skill call (around its sandbox call);
// end closes it with the outcome. Without a Tracer it changes nothing.
func (r *Registry) startSpan(ctx context.Context, p *Plugin, sk *Skill) (context.Context, func(*sandbox.Result, *fault.Error)) {
	if r.opts.Tracer == nil {
		return ctx, func(*sandbox.Result, *fault.Error) {}
	}
	ctx, span := r.opts.Tracer.Start(ctx, "skill.execute", trace.WithAttributes(
		attribute.String("skillhost.plugin", p.Manifest.Name), attribute.String("skillhost.plugin_version", p.Manifest.Version),
		attribute.String("skillhost.skill", sk.ID)))
	return ctx, func(res *sandbox.Result, err *fault.Error) {
		switch {
		case err != nil:
			span.SetAttributes(attribute.String("skillhost.reason", err.WireReason()))
			span.SetStatus(codes.Error, err.WireReason())
		case res != nil:
			span.SetAttributes(attribute.Int64("skillhost.memory_peak_bytes", int64(res.MemoryPeakBytes)),
				attribute.Bool("skillhost.fresh_instance", res.Fresh))
		}
		span.End()
	}
}
