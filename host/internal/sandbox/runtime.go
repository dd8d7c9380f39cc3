package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
)

// RuntimeConfig configures a Runtime.
type RuntimeConfig struct {
	// CacheDir holds wazero's on-disk compilation cache, shared by every
	// module (a cold compile of a large Go plugin takes ~1 s, a cached one
	// ~45 ms). Optional. Default: "" (an in-memory cache).
	CacheDir string
	// Logger receives guest stdout/stderr (debug level, capped) and the
	// guest's Extism log lines (log_debug … log_error, go-pdk's pdk.Log) at
	// their level, rate-limited per plugin. Optional. Default: discard.
	Logger *slog.Logger
	// MaxLiveBytes caps the host memory all live instances and running
	// calls of the runtime may hold, counted at their worst case (see
	// Module.Cost): an instance reserves its cost while it lives, a call its
	// stack allowance while it runs, and whatever would not fit waits
	// (QueueWait) and then fails with pool_saturated. A module one instance
	// of which could never fit is refused at Load (ErrOverBudget).
	// Optional. Default: DefaultMaxLiveBytes().
	MaxLiveBytes uint64
}

// Runtime compiles and owns modules. It is safe for concurrent use.
type Runtime struct {
	cache    wazero.CompilationCache
	cacheDir string // "" for an in-memory cache
	logger   *slog.Logger
	imports  map[string]bool
	stats    counters
	budget   *budget
	compiles compileCounts

	mu      sync.Mutex
	modules map[*Module]struct{}
	closed  bool
	loading sync.WaitGroup // Loads in progress (they use the cache)

	closeOnce sync.Once
	closeErr  error
}

// NewRuntime opens the compilation cache and prepares the host imports.
func NewRuntime(ctx context.Context, cfg RuntimeConfig) (*Runtime, error) {
	cache := wazero.NewCompilationCache()
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("opening compilation cache %q: %w", cfg.CacheDir, err)
		}
		cache = c
	}
	enableExtismLogs()
	imports, err := baseImports(ctx)
	if err != nil {
		return nil, errors.Join(err, cache.Close(ctx))
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	total := cfg.MaxLiveBytes
	if total == 0 {
		total = DefaultMaxLiveBytes()
	}
	return &Runtime{cache: cache, cacheDir: cfg.CacheDir, logger: logger, imports: imports, modules: map[*Module]struct{}{}, budget: newBudget(total)}, nil
}

// Close closes every module still loaded (waiting for their in-flight calls
// until ctx ends) and the compilation cache. It is idempotent.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.closeOnce.Do(func() { rt.closeErr = rt.close(ctx) })
	return rt.closeErr
}

func (rt *Runtime) close(ctx context.Context) error {
	rt.mu.Lock()
	rt.closed = true
	rt.mu.Unlock()
	rt.loading.Wait() // a closed cache must not be used by a running compile
	rt.mu.Lock()
	mods := make([]*Module, 0, len(rt.modules))
	for m := range rt.modules {
		mods = append(mods, m)
	}
	rt.mu.Unlock()
	var errs []error
	for _, m := range mods {
		errs = append(errs, m.Close(ctx))
	}
	errs = append(errs, rt.cache.Close(ctx))
	return errors.Join(errs...)
}

// Stats returns the runtime-wide counters (all modules, including closed ones).
func (rt *Runtime) Stats() Stats {
	st := rt.stats.snapshot()
	st.BudgetBytes, st.ReservedBytes = rt.budget.total, uint64(max(0, rt.budget.used.Load()))
	st.CompileHits, st.CompileMisses = rt.compiles.hits.Load(), rt.compiles.misses.Load()
	rt.mu.Lock()
	for m := range rt.modules {
		st.InstancesIdle += uint64(len(m.idle))
	}
	rt.mu.Unlock()
	return st
}

// ModuleSpec is what Load needs to run a module.
type ModuleSpec struct {
	// Name identifies the module in errors and logs (the plugin name).
	Name string
	// Wasm is the module's binary.
	Wasm []byte
	// Limits bound the module; zero fields take DefaultLimits.
	Limits Limits
	// Config is handed to the plugin (Extism config_get).
	Config map[string]string
	// Mounts are read-only file systems visible to the guest; nothing else is.
	Mounts []Mount
	// HostFunctions are the host functions the plugin may import.
	HostFunctions []extism.HostFunction
}

// Load validates, compiles and instantiates the module's warm instances.
// Errors name the module; content errors wrap ErrInvalidModule and limit
// errors wrap ErrInvalidLimits. Warm instances are created under ctx bounded
// by the module's Timeout, so a start function that never returns fails Load.
func (rt *Runtime) Load(ctx context.Context, spec ModuleSpec) (*Module, error) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, fmt.Errorf("loading plugin %q: runtime is closed", spec.Name)
	}
	rt.loading.Add(1)
	rt.mu.Unlock()
	defer rt.loading.Done()
	m, err := rt.load(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("loading plugin %q: %w", spec.Name, err)
	}
	return m, nil
}

func (rt *Runtime) load(ctx context.Context, spec ModuleSpec) (*Module, error) {
	limits, err := spec.Limits.normalized()
	if err != nil {
		return nil, err
	}
	info, err := Inspect(ctx, spec.Wasm)
	if err != nil {
		return nil, err
	}
	if info.MemoryMinPages > limits.memoryPages() {
		return nil, fmt.Errorf("%w: module declares a minimum memory of %s (%d pages), over the cap of %s",
			ErrInvalidModule, formatBytes(uint64(info.MemoryMinPages)*pageSize), info.MemoryMinPages, formatBytes(limits.MemoryBytes))
	}
	if err := checkImports(info, rt.imports, spec.HostFunctions); err != nil {
		return nil, err
	}
	// Tables live in Go memory the meter cannot see: bound them at load.
	maxes, err := tableLimits(info.Tables, limits.MemoryBytes)
	if err != nil {
		return nil, err
	}
	if spec.Wasm, err = withTableMaximums(spec.Wasm, info.Tables, maxes); err != nil {
		return nil, fmt.Errorf("%w: bounding the tables: %w", ErrInvalidModule, err)
	}
	cost := Cost{Instance: instanceCost(info, limits, maxes), Call: stackCost(info)}
	if err := rt.budget.checkFits(cost.Instance, cost.Call, limits); err != nil {
		return nil, err
	}
	for _, mnt := range spec.Mounts {
		if mnt.FS == nil || mnt.GuestPath == "" {
			return nil, fmt.Errorf("mount %q: guest path and file system are required", mnt.GuestPath)
		}
	}
	compiled, err := rt.compile(ctx, spec, limits)
	if err != nil {
		return nil, err
	}
	m := newModule(rt, spec, limits, info, compiled, cost)
	if err := m.warm(ctx); err != nil {
		return nil, errors.Join(err, compiled.Close(context.WithoutCancel(ctx)))
	}
	rt.mu.Lock()
	rt.modules[m] = struct{}{} // Close waits for this Load before listing modules
	rt.mu.Unlock()
	return m, nil
}

// compile builds the Extism compiled plugin: WASI on, no allowed hosts or
// paths, every Extism byte limit set explicitly, the shared compilation cache,
// close-on-context-done, wazero's page limit at the wasm32 maximum (the
// budget is enforced by the meter, see memory.go), and no DWARF: wazero
// would copy a module's debug sections and parse them (untrusted input) and
// keep the line tables for the module's life (~50 MB for a Go plugin);
// errors only use the first line of a trap's message.
func (rt *Runtime) compile(ctx context.Context, spec ModuleSpec, limits Limits) (*extism.CompiledPlugin, error) {
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(rt.cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(maxPages).
		WithDebugInfoEnabled(false)
	manifest := extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: spec.Wasm, Name: "main"}},
		Config: spec.Config,
		Memory: &extism.ManifestMemory{
			// MaxPages stays 0: a non-zero value makes Extism set wazero's page
			// limit, which refuses growth before the meter can see it.
			MaxPages:             0,
			MaxVarBytes:          maxVarBytes,
			MaxHttpResponseBytes: maxHTTPResponseBytes,
		},
	}
	before := cacheEntries(rt.cacheDir)
	compiled, err := extism.NewCompiledPlugin(ctx, manifest, extism.PluginConfig{
		RuntimeConfig: cfg,
		EnableWasi:    true,
	}, spec.HostFunctions)
	if err != nil {
		return nil, fmt.Errorf("%w: compiling: %w", ErrInvalidModule, err)
	}
	rt.compiles.count(before, cacheEntries(rt.cacheDir))
	return compiled, nil
}

// Extism byte limits (built in Go they default to 0 = disabled).
const (
	maxVarBytes          = 1 << 20 // Extism vars kept per instance
	maxHTTPResponseBytes = 1 << 20 // moot: no allowed hosts, Extism HTTP is refused
)

// forget removes a closed module.
func (rt *Runtime) forget(m *Module) {
	rt.mu.Lock()
	delete(rt.modules, m)
	rt.mu.Unlock()
}

// formatBytes renders n as B, KiB, MiB or GiB.
func formatBytes(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
