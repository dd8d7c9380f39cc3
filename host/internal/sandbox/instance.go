package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

// Mount is a read-only file system visible to the guest at GuestPath. The
// caller builds FS and is responsible for its confinement: prefer
// os.Root.FS() over os.DirFS, which follows symlinks out of the directory.
type Mount struct {
	GuestPath string
	FS        fs.FS
}

// maxSleep bounds one guest sleep (WASI poll_oneoff): a sleeping guest
// wakes at least this often, so the call's deadline can interrupt it.
const maxSleep = 10 * time.Millisecond

// logBudget caps what one instance may write to the logger through WASI
// stdout/stderr in one call; the rest is discarded.
const logBudget = 64 << 10

// logLineCap truncates each logged chunk.
const logLineCap = 1 << 10

// instance is one Extism plugin instance and its memory meter. It runs one
// call at a time (the pool hands it to one caller).
type instance struct {
	plugin *extism.Plugin
	fast   *fastCall // nil: calls go through CallWithContext
	meter  *meter
	log    *cappedLog
	// running is the call in progress (set by Module.call around the
	// guest's run), so Extism log lines carry its context and function.
	running struct {
		ctx      context.Context
		function string
	}
	// exited is set when any module of the instance closes (wazero's close
	// notifier): a guest calling WASI proc_exit closes its own module, and
	// Extism reports proc_exit(0) as a success, so this is the only evidence
	// that the instance is dead.
	exited atomic.Bool

	budget   *budget // the runtime's, which holds reserved for this instance
	reserved uint64
	closed   atomic.Bool
	// lastUsed is when the instance last went back to the pool (guarded by
	// the module's mu while it is there).
	lastUsed time.Time
}

// moduleConfig builds the WASI configuration shared by a module's
// instances: no env, args = [name], real clocks, crypto random, bounded
// sleep, read-only mounts, stdout/stderr to the capped logger.
func moduleConfig(name string, mounts []Mount) wazero.ModuleConfig {
	mc := wazero.NewModuleConfig().
		WithArgs(name).
		WithSysWalltime().
		WithSysNanotime().
		WithNanosleep(func(ns int64) { time.Sleep(min(time.Duration(ns), maxSleep)) }).
		WithRandSource(rand.Reader)
	if len(mounts) > 0 {
		fsc := wazero.NewFSConfig()
		for _, m := range mounts {
			fsc = fsc.WithFSMount(readOnlyFS{m.FS}, m.GuestPath)
		}
		mc = mc.WithFSConfig(fsc)
	}
	return mc
}

// newInstance instantiates the compiled code c under ctx (whose deadline
// bounds any start function) with a fresh memory meter. The caller has
// reserved the instance's cost in the runtime's budget; the instance gives
// it back when it is closed (or at once when instantiation fails). The
// caller holds c (pinned, or not yet installed) and counts the instance in
// the module's live instances.
func (m *Module) newInstance(ctx context.Context, c *code) (_ *instance, err error) {
	defer func() {
		if err != nil {
			m.rt.budget.release(m.cost.Instance)
		}
	}()
	inst := &instance{meter: newMeter(m.limits.MemoryBytes), log: newCappedLog(m.logger, m.name),
		budget: m.rt.budget, reserved: m.cost.Instance}
	ictx := experimental.WithMemoryAllocator(ctx, inst.meter)
	ictx = experimental.WithCloseNotifier(ictx, experimental.CloseNotifyFunc(func(context.Context, uint32) {
		inst.exited.Store(true)
	}))
	cfg := m.modCfg.WithStdout(inst.log).WithStderr(inst.log)
	p, err := c.plugin.Instance(ictx, extism.PluginInstanceConfig{ModuleConfig: cfg})
	if err != nil {
		return nil, &instantiateError{err: err, meter: inst.meter}
	}
	if inst.exited.Load() { // a start function called proc_exit(0)
		_ = p.Close(context.WithoutCancel(ctx))
		return nil, &instantiateError{err: errors.New("the plugin exited during instantiation"), meter: inst.meter}
	}
	p.SetLogger(func(level extism.LogLevel, msg string) {
		ctx := inst.running.ctx
		if ctx == nil { // no call running: nothing of the guest's
			return
		}
		m.guestLog.write(ctx, inst.running.function, level, msg)
	})
	inst.plugin = p
	inst.fast, _ = newFastCall(p)
	m.stats.instanceCreated()
	return inst, nil
}

// call runs function with input on the instance.
func (i *instance) call(ctx context.Context, function string, input []byte) (uint32, []byte, error) {
	if i.fast != nil {
		return i.fast.call(ctx, function, input)
	}
	return i.plugin.CallWithContext(ctx, function, input)
}

// instantiateError is a failed instantiation with the meter that watched it.
type instantiateError struct {
	err   error
	meter *meter
}

func (e *instantiateError) Error() string { return "instantiating plugin: " + e.err.Error() }
func (e *instantiateError) Unwrap() error { return e.err }

// close frees the instance and gives its budget back; ctx may already be
// done. It is idempotent.
func (i *instance) close(ctx context.Context) {
	if i.closed.Swap(true) {
		return
	}
	_ = i.plugin.Close(context.WithoutCancel(ctx))
	i.budget.release(i.reserved)
}

// cappedLog forwards guest output to a logger, truncating each chunk and
// dropping everything past a total budget.
type cappedLog struct {
	logger *slog.Logger
	plugin string

	mu   sync.Mutex
	left int
}

func newCappedLog(logger *slog.Logger, plugin string) *cappedLog {
	return &cappedLog{logger: logger, plugin: plugin, left: logBudget}
}

// reset restores the budget; called before each call.
func (c *cappedLog) reset() {
	c.mu.Lock()
	c.left = logBudget
	c.mu.Unlock()
}

// Write implements io.Writer; it never fails.
func (c *cappedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	n := min(len(p), c.left, logLineCap)
	c.left -= n
	c.mu.Unlock()
	if n > 0 {
		c.logger.Debug("plugin output", "plugin", c.plugin, "text", string(p[:n]), "truncated", n < len(p))
	}
	return len(p), nil
}

// readOnlyFS hides any write capability of the files of an fs.FS: wazero
// writes through a file that implements io.Writer even on an fs.FS mount.
type readOnlyFS struct{ fsys fs.FS }

func (r readOnlyFS) Open(name string) (fs.File, error) {
	f, err := r.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return readOnlyFile{f}, nil
}

// readOnlyFile exposes reading, seeking and directory listing only.
type readOnlyFile struct{ f fs.File }

func (r readOnlyFile) Stat() (fs.FileInfo, error) { return r.f.Stat() }
func (r readOnlyFile) Read(p []byte) (int, error) { return r.f.Read(p) }
func (r readOnlyFile) Close() error               { return r.f.Close() }

// ReadDir implements fs.ReadDirFile when the underlying file does.
func (r readOnlyFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if d, ok := r.f.(fs.ReadDirFile); ok {
		return d.ReadDir(n)
	}
	return nil, &fs.PathError{Op: "readdir", Err: fs.ErrInvalid}
}

// Seek implements io.Seeker when the underlying file does.
func (r readOnlyFile) Seek(offset int64, whence int) (int64, error) {
	if s, ok := r.f.(io.Seeker); ok {
		return s.Seek(offset, whence)
	}
	return 0, &fs.PathError{Op: "seek", Err: fs.ErrInvalid}
}

// ReadAt implements io.ReaderAt when the underlying file does.
func (r readOnlyFile) ReadAt(p []byte, off int64) (int, error) {
	if ra, ok := r.f.(io.ReaderAt); ok {
		return ra.ReadAt(p, off)
	}
	return 0, &fs.PathError{Op: "readat", Err: fs.ErrInvalid}
}
