package plugin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// RegistryOptions configure a Registry.
type RegistryOptions struct {
	// Policy caps what plugins may request. Optional. Default:
	// config.DefaultPolicy() (zero fields take its values).
	Policy config.Policy
	// HostFunctions returns the host functions given to a plugin (the hostfn
	// package builds them from its permissions); reg is the registry
	// loading it, for host functions that call other plugins (agent_call),
	// so they need no registry before this one exists. Optional. Default:
	// none.
	HostFunctions func(m *Manifest, reg *Registry) []extism.HostFunction
	// Logger receives load problems (error), reloads (info) and skipped
	// folders (debug). Optional. Default: slog.Default().
	Logger *slog.Logger
	// Trust is the plugin signature policy: a plugin whose signature file
	// is malformed or does not match the folder is always refused; with
	// Trust.Require, so is one without a signature by a trusted publisher.
	// Optional. Default: signatures optional, no trusted publishers.
	Trust Trust
	// Debounce is how long Watch waits after the last file event before it
	// rescans. Optional. Default: 250ms.
	Debounce time.Duration
	// Observer sees every call of a loaded skill and every load event
	// (metrics, access logs, the admin endpoints). Optional. Default: none.
	Observer Observer
	// Tracer records a span per skill call, around the sandbox call.
	// Optional. Default: none (no span, no cost).
	Tracer trace.Tracer
	// Config returns the key/values handed to a plugin (its Extism config,
	// read by the guest's config function), called each time the plugin
	// loads: the operator's plugins.<name> settings merged over the
	// manifest's permissions.config. An error refuses the plugin (a Problem;
	// it must not carry a secret's value). Optional. Default: the
	// manifest's permissions.config.
	Config func(m *Manifest) (map[string]string, error)
	// Settings returns a digest of what Config hands the plugin named name
	// besides its manifest (the operator's settings and the secrets' current
	// values; never a value itself), part of each folder's fingerprint: a
	// rescan reloads a plugin whose digest changed (a rotated secret).
	// Optional. Default: none.
	Settings func(name string) string
	// WatchFiles are files outside the plugin folder that Settings reads
	// (secret files): Watch watches their folders too, so a rotation
	// reloads the plugin like a change in its folder. Optional.
	WatchFiles []string
	// Limiter holds the token buckets of Policy.SkillRates. Optional.
	// Default: an auth.MemoryLimiter (each host limits on its own).
	Limiter auth.Limiter
}

// Problem is a plugin folder that could not be (re)loaded, for operators.
type Problem struct {
	Path    string    `json:"path"`    // the plugin folder
	Message string    `json:"message"` // names the file and field where it applies
	Time    time.Time `json:"time"`    // when it was detected
}

// Plugin is a loaded plugin revision. It is immutable.
type Plugin struct {
	Manifest   *Manifest
	Dir        string
	Limits     sandbox.Limits // effective limits: the requests, defaults filled, capped by the policy
	WasmSHA256 string         // lowercase hex SHA-256 of the module bytes
	LoadedAt   time.Time
	Info       sandbox.ModuleInfo
	// Revision is the registry revision (Snapshot.Revision) that loaded
	// this plugin revision.
	Revision uint64
	// Signing is what the plugin's signature file proved (who signed);
	// nil when the plugin is unsigned.
	Signing *Signing
}

// Skill returns the plugin's skill with the given id.
func (p *Plugin) Skill(id string) (*Skill, bool) {
	for _, s := range p.Manifest.Skills {
		if s.ID == id {
			return s, true
		}
	}
	return nil, false
}

// Registry holds the loaded plugins and routes skill calls to them. It is
// safe for concurrent use. Loading, reloading and closing are serialized;
// Execute never waits for a load. A new plugin is served as soon as it is
// validated: its module compiles in the background, calls wait for it
// within their deadline, and a module that then fails to compile (or to
// instantiate) is unloaded and recorded as a problem.
type Registry struct {
	rt       *sandbox.Runtime
	opts     RegistryOptions
	policy   policy
	rates    *auth.SkillRates // policy.skill_rates; nil: none
	log      *slog.Logger
	debounce time.Duration

	syncMu sync.Mutex         // serializes sync, Reload, LoadDir, Load, Close
	roots  []string           // folders of plugin folders scanned by sync; guarded by syncMu
	dirs   []string           // single plugin folders given to Load; guarded by syncMu
	failed map[string]failure // by plugin dir; guarded by syncMu

	loadingMu sync.Mutex
	loading   map[string]Loading // folders compiling now, by dir

	mu     sync.RWMutex // guards cur and closed; read-held while a call acquires an entry
	cur    *state
	closed bool

	listenMu  sync.Mutex
	listeners []func(*Snapshot)

	checks  sync.WaitGroup // goroutines waiting for a module's load check
	pending atomic.Int64   // load checks not settled yet (the log says when none is left)
}

// failure remembers a folder that failed so an unchanged folder is not
// recompiled on every rescan. Collisions are retried: the owner may leave.
type failure struct {
	fp      string
	retry   bool
	err     error // as load returned it
	problem Problem
}

// state is one immutable generation of the registry.
type state struct {
	snap    *Snapshot
	byDir   map[string]*entry
	byName  map[string]*entry
	bySkill map[string]*entry
}

// entry is a loaded plugin revision with its module and reference count.
type entry struct {
	plugin  *Plugin
	module  *sandbox.Module
	fp      string        // fingerprint of the folder it was loaded from
	closers []io.Closer   // mount roots
	took    time.Duration // how long validating took (and, for a replacement, its load check)

	settled atomic.Bool // its load check's outcome has been applied (settle)

	refs    atomic.Int64
	retired atomic.Bool
	closed  atomic.Bool // the module has been closed
	once    sync.Once
}

// NewRegistry returns an empty registry that compiles plugins with rt.
// Call Policy.Validate first to report a misconfigured policy.
func NewRegistry(rt *sandbox.Runtime, opts RegistryOptions) *Registry {
	r := &Registry{
		rt: rt, opts: opts, policy: newPolicy(opts.Policy),
		log: opts.Logger, debounce: opts.Debounce,
		failed: map[string]failure{}, loading: map[string]Loading{},
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.rates = skillRates(opts.Policy, opts.Limiter, r.log)
	if r.debounce <= 0 {
		r.debounce = 250 * time.Millisecond
	}
	r.cur = newState(0, nil, nil)
	return r
}

func newState(rev uint64, entries map[string]*entry, problems []Problem) *state {
	s := &state{byDir: map[string]*entry{}, byName: map[string]*entry{}, bySkill: map[string]*entry{}}
	snap := &Snapshot{Revision: rev, Problems: problems, byName: map[string]*Plugin{}, bySkill: map[string]skillRef{}}
	for dir, e := range entries {
		s.byDir[dir], s.byName[e.plugin.Manifest.Name] = e, e
		snap.Plugins = append(snap.Plugins, e.plugin)
		snap.byName[e.plugin.Manifest.Name] = e.plugin
		for _, sk := range e.plugin.Manifest.Skills {
			s.bySkill[sk.ID] = e
			snap.bySkill[sk.ID] = skillRef{e.plugin, sk}
		}
	}
	sort.Slice(snap.Plugins, func(i, j int) bool { return snap.Plugins[i].Manifest.Name < snap.Plugins[j].Manifest.Name })
	s.snap = snap
	return s
}

// Snapshot returns the current immutable view of the loaded plugins.
func (r *Registry) Snapshot() *Snapshot {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur.snap
}

// Problems lists the plugin folders that currently fail to load.
func (r *Registry) Problems() []Problem {
	return append([]Problem(nil), r.Snapshot().Problems...)
}

// OnChange registers f to be called with each new snapshot after a change.
// Callbacks run one at a time, in registration order, on the goroutine that
// made the change; they must not call LoadDir, Reload or Close.
func (r *Registry) OnChange(f func(*Snapshot)) {
	r.listenMu.Lock()
	defer r.listenMu.Unlock()
	r.listeners = append(r.listeners, f)
}

func (r *Registry) notify(s *Snapshot) {
	r.listenMu.Lock()
	fs := slices.Clone(r.listeners)
	r.listenMu.Unlock()
	for _, f := range fs {
		f(s)
	}
}

// Close unloads every plugin: it waits for the calls in flight (the sandbox
// module's Close does), then frees the modules. Execute fails afterwards.
func (r *Registry) Close(ctx context.Context) error {
	r.syncMu.Lock()
	defer r.syncMu.Unlock()
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	old := r.cur
	r.cur = newState(old.snap.Revision+1, nil, nil)
	r.mu.Unlock()
	var errs []error
	for _, e := range old.byDir {
		e.retired.Store(true)
		errs = append(errs, e.close(ctx))
	}
	r.syncMu.Unlock()
	r.checks.Wait() // they end once their module is closed
	r.syncMu.Lock()
	return errors.Join(errs...)
}

// release unpins e after a call (Registry.acquire pinned it) and closes a
// retired entry when its last call returns.
func (e *entry) release(ctx context.Context) {
	if e.refs.Add(-1) == 0 && e.retired.Load() {
		_ = e.close(context.WithoutCancel(ctx))
	}
}

// retire marks e replaced; it is closed now if idle, else by the last release.
func (e *entry) retire(ctx context.Context) error {
	e.retired.Store(true)
	if e.refs.Load() == 0 {
		return e.close(ctx)
	}
	return nil
}

func (e *entry) close(ctx context.Context) error {
	var err error
	e.once.Do(func() {
		e.closed.Store(true)
		errs := []error{e.module.Close(ctx)}
		for _, c := range e.closers {
			errs = append(errs, c.Close())
		}
		err = errors.Join(errs...)
	})
	return err
}
