package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
)

// RuntimeConfig configures a Runtime.
type RuntimeConfig struct {
	// CacheDir holds wazero's on-disk compilation cache, shared by every
	// module (a cold compile of a large Go plugin takes ~1 s, a cached one
	// ~45 ms), and the record of the modules whose load check passed (a
	// module on record is not compiled again at Register). Optional.
	// Default: "" (no disk cache: released code is compiled again in full).
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
	// MaxCodeBytes bounds the compiled code held resident by modules (an
	// estimate, see Stats.CodeBytes): past it, the code of the least
	// recently used modules that run no call and keep no MinInstances is
	// released (with their idle instances), to be loaded again from the
	// compilation cache by their next call. Code in use is never released,
	// so the bound is soft. The host passes sandbox.max_code_bytes.
	// Optional. Default: 0, no bound.
	MaxCodeBytes uint64
	// CompileWorkers is how many modules compile at once (load checks in
	// the background and code loaded again for calls, which go first).
	// Optional. Default: runtime.GOMAXPROCS(0), the cores the process may use.
	CompileWorkers int
}

// Runtime compiles and owns modules. It is safe for concurrent use.
type Runtime struct {
	cacheDir string // "" for no disk cache
	logger   *slog.Logger
	imports  map[string]bool
	stats    counters
	budget   *budget
	compiles compileCounts
	gate     *gate
	workers  int
	jan      *janitor

	bg     context.Context // background compiles; canceled by Close
	stopBg context.CancelFunc

	useSeq     atomic.Uint64 // counts module uses (Module.useSeq)
	lastActive atomic.Int64  // unix ns of the last call's end, for the janitor's collections
	codeMu     sync.Mutex
	resident   map[*Module]uint64 // modules with code resident, and its estimate
	codeBytes  uint64
	maxCode    uint64

	mu        sync.Mutex
	modules   map[*Module]struct{}
	closed    bool
	loading   sync.WaitGroup // Registers in progress
	compiling sync.WaitGroup // compiles in flight (they use the cache folder)

	closeOnce sync.Once
	closeErr  error
}

// NewRuntime checks the compilation cache folder, prepares the host
// imports and starts the sweeper that closes idle instances and releases
// idle code.
func NewRuntime(ctx context.Context, cfg RuntimeConfig) (*Runtime, error) {
	if cfg.CacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cfg.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("opening compilation cache %q: %w", cfg.CacheDir, err)
		}
		_ = c.Close(ctx)
	}
	enableExtismLogs()
	imports, err := baseImports(ctx)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	total := cfg.MaxLiveBytes
	if total == 0 {
		total = DefaultMaxLiveBytes()
	}
	workers := cfg.CompileWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	maxCode := cfg.MaxCodeBytes
	rt := &Runtime{cacheDir: cfg.CacheDir, logger: logger, imports: imports, modules: map[*Module]struct{}{},
		budget: newBudget(total), gate: newGate(workers), workers: workers,
		resident: map[*Module]uint64{}, maxCode: maxCode}
	rt.bg, rt.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	rt.jan = startJanitor(rt)
	return rt, nil
}

// Close closes every module still loaded (waiting for their in-flight calls
// until ctx ends) after the compiles in flight end. It is idempotent.
func (rt *Runtime) Close(ctx context.Context) error {
	rt.closeOnce.Do(func() { rt.closeErr = rt.close(ctx) })
	return rt.closeErr
}

func (rt *Runtime) close(ctx context.Context) error {
	rt.mu.Lock()
	rt.closed = true
	rt.mu.Unlock()
	rt.loading.Wait()
	rt.stopBg() // queued compiles give up; running ones finish
	rt.compiling.Wait()
	rt.jan.stop()
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
	return errors.Join(errs...)
}

// Stats returns the runtime-wide counters (all modules, including closed ones).
func (rt *Runtime) Stats() Stats {
	st := rt.stats.snapshot()
	st.BudgetBytes, st.ReservedBytes = rt.budget.total, uint64(max(0, rt.budget.used.Load()))
	st.CompileHits, st.CompileMisses = rt.compiles.hits.Load(), rt.compiles.misses.Load()
	rt.codeMu.Lock()
	st.CodeBytes, st.CodeModules = rt.codeBytes, uint64(len(rt.resident))
	rt.codeMu.Unlock()
	st.CodeBudgetBytes, st.CompileWorkers = rt.maxCode, rt.workers
	st.CompilesRunning, st.CompilesQueued = uint64(rt.gate.running()), uint64(rt.gate.waiting())
	rt.mu.Lock()
	mods := make([]*Module, 0, len(rt.modules))
	for m := range rt.modules {
		mods = append(mods, m)
	}
	rt.mu.Unlock()
	for _, m := range mods {
		m.mu.Lock()
		st.InstancesIdle += uint64(len(m.idle))
		if m.op != nil {
			st.Compiling++
		}
		m.mu.Unlock()
	}
	return st
}

// HoldBackground keeps the background load checks from starting until
// resume is called (compiles a call waits for, and Ready's, go on): a
// caller registering many modules (a host starting) validates them without
// compiles competing for the cores, and releases them all at once.
func (rt *Runtime) HoldBackground() (resume func()) { return rt.gate.hold() }

// ModuleSpec is what Load needs to run a module.
type ModuleSpec struct {
	// Name identifies the module in errors and logs (the plugin name).
	Name string
	// Wasm is the module's binary.
	Wasm []byte
	// SHA256 is Wasm's SHA-256 when the caller has computed it (Source's
	// bytes are checked against it). Optional. Default: computed.
	SHA256 [32]byte
	// Source reads the module's binary again when its code must be
	// compiled after it was released (the bytes must hash to Wasm's, else
	// that compile fails), so that the module does not keep Wasm in memory.
	// Optional. Default: nil (Wasm is kept for the module's life).
	Source func() ([]byte, error)
	// Limits bound the module; zero fields take DefaultLimits.
	Limits Limits
	// Config is handed to the plugin (Extism config_get).
	Config map[string]string
	// Mounts are read-only file systems visible to the guest; nothing else is.
	Mounts []Mount
	// HostFunctions are the host functions the plugin may import.
	HostFunctions []extism.HostFunction
}

// Load registers the module (see Register) and waits for its load check:
// the module compiled (from the compilation cache when it is there) and
// instantiated once, even when a check is on record. Its code and that
// instance are kept for a first call (and released after
// Limits.IdleTimeout unused).
// Errors name the module; content errors wrap ErrInvalidModule and limit
// errors wrap ErrInvalidLimits. The check's instance is created under a
// deadline of the module's Timeout, so a start function that never
// returns fails Load.
func (rt *Runtime) Load(ctx context.Context, spec ModuleSpec) (*Module, error) {
	m, err := rt.register(ctx, spec, true)
	if err != nil {
		return nil, err
	}
	if err := m.Ready(ctx); err != nil {
		return nil, errors.Join(err, m.Close(context.WithoutCancel(ctx)))
	}
	return m, nil
}

// Register validates the module without compiling it: limits, shape,
// declared memory, imports, tables, and whether one instance fits the
// memory budget. The module is returned at once; its load check (compile,
// instantiate once) runs in the background, at most CompileWorkers at a
// time, unless the compilation cache records that this module passed it
// before. A call meanwhile waits for the check (within its deadline); Ready
// waits for its outcome. With a CacheDir the code is not kept once checked
// (unless a call waited for it): the first call loads it from the cache.
func (rt *Runtime) Register(ctx context.Context, spec ModuleSpec) (*Module, error) {
	return rt.register(ctx, spec, false)
}

func (rt *Runtime) register(ctx context.Context, spec ModuleSpec, keep bool) (*Module, error) {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		return nil, fmt.Errorf("loading plugin %q: runtime is closed", spec.Name)
	}
	rt.loading.Add(1)
	rt.mu.Unlock()
	defer rt.loading.Done()
	m, err := rt.validate(ctx, spec, keep)
	if err != nil {
		return nil, fmt.Errorf("loading plugin %q: %w", spec.Name, err)
	}
	rt.mu.Lock()
	rt.modules[m] = struct{}{} // Close waits for this Register before listing modules
	rt.mu.Unlock()
	m.mu.Lock()
	if !keep && rt.isChecked(m.checkKey) { // Load wants the code and an instance: it always compiles
		m.checkDone(nil)
	} else {
		m.startCompile(true, keep)
	}
	m.mu.Unlock()
	if m.limits.MinInstances > 0 {
		rt.wake(time.Now()) // the sweeper creates them (compiling first if needed)
	}
	return m, nil
}

func (rt *Runtime) validate(ctx context.Context, spec ModuleSpec, keep bool) (*Module, error) {
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
	if _, err := withTableMaximums(spec.Wasm, info.Tables, maxes); err != nil {
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
	return newModule(rt, spec, limits, info, maxes, cost, keep), nil
}

// compile builds the Extism compiled plugin: WASI on, no allowed hosts or
// paths, every Extism byte limit set explicitly, a compilation cache of its
// own on the cache folder (see code), close-on-context-done, wazero's page
// limit at the wasm32 maximum (the budget is enforced by the meter, see
// memory.go), and no DWARF: wazero would copy a module's debug sections and
// parse them (untrusted input) and keep the line tables for the module's
// life (~50 MB for a Go plugin); errors only use the first line of a
// trap's message.
func (rt *Runtime) compile(ctx context.Context, name string, wasm []byte, config map[string]string, hostFns []extism.HostFunction) (*code, error) {
	cache := wazero.NewCompilationCache()
	if rt.cacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(rt.cacheDir)
		if err != nil {
			return nil, fmt.Errorf("opening compilation cache %q: %w", rt.cacheDir, err)
		}
		cache = c
	}
	cfg := wazero.NewRuntimeConfig().
		WithCompilationCache(cache).
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(maxPages).
		WithDebugInfoEnabled(false)
	manifest := extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: wasm, Name: "main"}},
		Config: config,
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
	}, hostFns)
	if err != nil {
		_ = cache.Close(ctx)
		return nil, fmt.Errorf("%w: compiling: %w", ErrInvalidModule, err)
	}
	rt.compiles.count(before, cacheEntries(rt.cacheDir))
	return &code{plugin: compiled, cache: cache, bytes: codeCost(len(wasm))}, nil
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
