package sandbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/skillhost/skillhost/host/fault"
)

// code is one residency of a module's compiled code: the Extism compiled
// plugin and the wazero compilation cache that holds its machine code.
// Each residency has a cache of its own (on the runtime's cache folder):
// wazero keeps a module's machine code in the cache's engine until the
// cache is closed (closing the Extism plugin alone closes its wazero
// runtime, not the compiled modules, so a shared cache would keep every
// module ever compiled), and frees it (munmap) in a finalizer once the Go
// collector sees it unreachable.
type code struct {
	plugin *extism.CompiledPlugin
	cache  wazero.CompilationCache
	bytes  uint64 // the estimate counted against MaxCodeBytes
}

func (c *code) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	_ = c.plugin.Close(ctx)
	_ = c.cache.Close(ctx)
}

// What a module's compiled code holds resident, measured on wazero v1.12
// (the Go echo plugin, 3.1 MB of wasm: 11.6 MiB of machine code and 5.7 MiB
// of Go heap; a 740-byte WAT module: ~0.3 MiB, most of it Extism's kernel
// module and WASI): a base plus about six times the module's size.
const (
	codeBaseBytes    = 256 << 10
	codeBytesPerByte = 6
)

// codeCost estimates the resident size of a module's compiled code.
func codeCost(wasmBytes int) uint64 {
	return codeBaseBytes + codeBytesPerByte*uint64(wasmBytes)
}

// compileOp is one compilation of a module in flight. done is closed when
// it ended; err is set before.
type compileOp struct {
	done   chan struct{}
	err    error
	ctx    context.Context // canceled by the runtime's or the module's Close
	cancel context.CancelFunc
	ticket *ticket
	check  bool // the load check: compile and instantiate once
	since  time.Time
	// waiters are the calls waiting for it (guarded by the module's mu):
	// the code it produced stays resident for them.
	waiters int
}

// startCompile starts compiling m in the background (m.mu held). urgent
// puts it ahead of the background compiles (a call waits for it).
func (m *Module) startCompile(check, urgent bool) *compileOp {
	op := &compileOp{done: make(chan struct{}), ticket: newTicket(urgent), check: check, since: time.Now()}
	op.ctx, op.cancel = context.WithCancel(m.rt.bg)
	m.op = op
	m.rt.compiling.Add(1)
	go m.runCompile(op)
	return op
}

// runCompile compiles m once a compile slot is free and installs the code
// (and the load check's instance) or records the failure.
func (m *Module) runCompile(op *compileOp) {
	defer m.rt.compiling.Done()
	ctx := op.ctx
	defer op.cancel()
	var (
		c    *code
		inst *instance
		err  error
	)
	if err = m.rt.gate.acquire(ctx, op.ticket); err == nil {
		if m.isClosed() {
			err = errors.New("the module was closed")
		} else {
			c, inst, err = m.build(ctx, op.check)
		}
		m.rt.gate.release()
	}
	m.install(ctx, op, c, inst, err)
}

// build compiles the module's code and, for the load check, creates one
// instance (which runs its start function) when the budget has room.
func (m *Module) build(ctx context.Context, check bool) (*code, *instance, error) {
	wasm, err := m.moduleBytes()
	if err != nil {
		return nil, nil, err
	}
	c, err := m.rt.compile(ctx, m.name, wasm, m.config, m.hostFns)
	if err != nil {
		return nil, nil, err
	}
	m.stats.codeLoaded()
	if !check {
		return c, nil, nil
	}
	if !m.rt.budget.tryReserve(m.cost.Instance, m.cost.Call) {
		m.logger.Debug("sandbox: no room in the memory budget to instantiate the load check; the first call will",
			"plugin", m.name)
		return c, nil, nil
	}
	ictx, cancel := context.WithTimeout(ctx, m.limits.Timeout)
	defer cancel()
	inst, err := m.newInstance(ictx, c)
	if err != nil {
		c.close(ctx)
		return nil, nil, fmt.Errorf("creating an instance: %w", m.instantiateFault(ictx, ictx, err))
	}
	return c, inst, nil
}

// moduleBytes returns the module's bytes as compiled: read again through
// ModuleSpec.Source (when set) and checked against the digest taken at
// Load, then with the table maximums written in.
func (m *Module) moduleBytes() ([]byte, error) {
	wasm := m.wasm
	if m.source != nil {
		b, err := m.source()
		if err != nil {
			return nil, fmt.Errorf("reading the module again: %w", err)
		}
		if sha256.Sum256(b) != m.digest {
			return nil, errors.New("the module file changed since the plugin was loaded; its new revision loads with the next rescan")
		}
		wasm = b
	}
	out, err := withTableMaximums(wasm, m.info.Tables, m.tableMaxes)
	if err != nil {
		return nil, fmt.Errorf("%w: bounding the tables: %w", ErrInvalidModule, err)
	}
	return out, nil
}

// install ends op: the code becomes resident (unless nobody needs it: a
// background load check that no call waits for releases it at once), the
// load check's instance joins the pool, a failed load check fails the
// module.
func (m *Module) install(ctx context.Context, op *compileOp, c *code, inst *instance, err error) {
	var drop []*instance
	var dropCode *code
	var unpooled *instance // the load check's instance, released before it was pooled
	m.mu.Lock()
	m.op = nil
	op.err = err
	switch {
	case err != nil:
		if op.check {
			m.checkErr = err
		}
	case m.closed:
		dropCode = c
		if inst != nil {
			drop = append(drop, inst)
		}
	default:
		now := time.Now()
		m.code = c
		m.rt.addResident(m, c.bytes)
		m.touch(now)
		if inst != nil {
			m.live++
			inst.lastUsed = now
			m.idle = append(m.idle, inst)
		}
		// A background load check nobody waits for gives its code up at
		// once: loading it again from the disk cache is cheap (without
		// one, it is a full compile: the code then stays as any would).
		if op.check && !m.keepChecked && op.waiters == 0 && m.limits.MinInstances == 0 && m.rt.cacheDir != "" {
			drop, dropCode = m.takeAllLocked()
			if inst != nil { // never served a call: the pool's counters leave it out
				drop, unpooled = without1(drop, inst), inst
			}
		}
	}
	m.mu.Unlock()
	if op.check && err == nil && inst != nil {
		m.rt.markChecked(m.checkKey)
	}
	if err != nil {
		m.logger.Warn("sandbox: compiling failed", "plugin", m.name, "load_check", op.check, "error", err)
	}
	if unpooled != nil {
		unpooled.close(ctx)
		m.stats.instanceUncounted()
	}
	m.free(ctx, drop, dropCode)
	if err == nil && dropCode == nil {
		// Before the waiting calls go on: what they find resident then
		// already fits the budget.
		m.rt.enforceCodeBudget(ctx, m)
		m.rt.wake(time.Now().Add(m.limits.IdleTimeout))
		if m.limits.MinInstances > 0 {
			m.rt.wake(time.Now())
		}
	}
	close(op.done)
	if op.check { // after free: Ready's caller sees the check's instance gone
		m.mu.Lock()
		m.checkDone(err)
		m.mu.Unlock()
	}
}

// checkDone records the end of the load check (m.mu held).
func (m *Module) checkDone(err error) {
	m.checkErr = err
	select {
	case <-m.checked:
	default:
		m.checkTook = time.Since(m.registered)
		close(m.checked)
	}
}

// takeAllLocked removes every idle instance and the code (m.mu held; no
// instance may be busy and no call may hold the code) for the caller to
// free.
func (m *Module) takeAllLocked() ([]*instance, *code) {
	insts, c := m.idle, m.code
	m.idle = nil
	m.live -= len(insts)
	m.code = nil
	if c != nil {
		m.rt.removeResident(m, c.bytes)
	}
	return insts, c
}

// free closes released instances, then the code they ran on.
func (m *Module) free(ctx context.Context, insts []*instance, c *code) {
	for _, inst := range insts {
		inst.close(ctx)
		m.stats.instanceReleased()
	}
	if c != nil {
		c.close(ctx)
		m.stats.codeReleased()
	}
	if c != nil || len(insts) > 0 {
		m.rt.collectSoon()
	}
}

// pinCode returns the module's code for a call that must create an
// instance, compiling it first if it was released (or is still being
// compiled by the load check), and pins it until unpin. It waits at most
// until callCtx ends: a compile that takes longer answers plugin_loading
// (the compile goes on; a later call finds the code).
func (m *Module) pinCode(ctx, callCtx context.Context) (*code, *fault.Error) {
	m.mu.Lock()
	for {
		if m.closed {
			m.mu.Unlock()
			return nil, m.closedFault()
		}
		if m.code != nil {
			m.pins++
			m.mu.Unlock()
			return m.code, nil
		}
		if m.checkErr != nil {
			err := m.checkErr
			m.mu.Unlock()
			return nil, fault.Newf(fault.InvalidState, fault.ReasonModuleClosed,
				"plugin %q failed to load and is not served: %v", m.name, err).With("plugin", m.name)
		}
		op := m.op
		if op == nil {
			op = m.startCompile(false, true)
		} else {
			m.rt.gate.promote(op.ticket)
		}
		op.waiters++
		m.mu.Unlock()
		var waitErr *fault.Error
		select {
		case <-op.done:
		case <-m.done:
			waitErr = m.closedFault()
		case <-callCtx.Done():
			waitErr = m.loadingFault(ctx, callCtx, op)
		}
		m.mu.Lock()
		op.waiters--
		if waitErr != nil {
			m.mu.Unlock()
			return nil, waitErr
		}
		if op.err != nil && !op.check {
			m.mu.Unlock()
			return nil, fault.Wrap(fault.Internal, fault.ReasonInternal, op.err,
				fmt.Sprintf("plugin %q: loading its compiled code failed: %v", m.name, op.err)).With("plugin", m.name)
		}
	}
}

// unpin ends a pinCode (m.mu not held); created tells that the call's
// instance now lives (and holds the code in its stead).
func (m *Module) unpin(created bool) {
	m.mu.Lock()
	m.pins--
	if created {
		m.live++
	}
	if m.pins == 0 && m.closed {
		m.unpinned.Broadcast() // Close waits for the sweeper's instance
	}
	m.mu.Unlock()
}

// loadingFault is the answer to a call whose deadline passed while the
// module compiled: plugin_loading, or the caller's cancel.
func (m *Module) loadingFault(ctx, callCtx context.Context, op *compileOp) *fault.Error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctxFault(ctx, m.limits.Timeout)
	}
	what := "compiling"
	if !op.check {
		what = "loading its compiled code"
	}
	d, _ := callCtx.Deadline()
	return fault.Newf(fault.InvalidState, fault.ReasonPluginLoading,
		"plugin %q is still %s (for %s, past the call's deadline); retry shortly",
		m.name, what, time.Since(op.since).Round(time.Millisecond)).
		With("plugin", m.name).With("timeout_ms", d.Sub(op.since).Milliseconds())
}

// Ready waits until the module's load check (Runtime.Register compiles and
// instantiates a module once in the background) has ended, and returns its
// error: nil when the module compiled and instantiated (or a check of the
// same module by this host's compilation cache is on record).
func (m *Module) Ready(ctx context.Context) error {
	m.mu.Lock()
	if m.op != nil && m.op.check {
		m.rt.gate.promote(m.op.ticket) // someone waits for it now
	}
	m.mu.Unlock()
	select {
	case <-m.checked:
	case <-ctx.Done():
		return ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.checkErr != nil {
		return fmt.Errorf("loading plugin %q: %w", m.name, m.checkErr)
	}
	return nil
}

// Checking reports whether the load check is still running, and since when.
func (m *Module) Checking() (time.Time, bool) {
	select {
	case <-m.checked:
		return time.Time{}, false
	default:
		return m.registered, true
	}
}

// Checked is closed when the load check has ended (see Ready).
func (m *Module) Checked() <-chan struct{} { return m.checked }

// CheckTook is how long the load check took from Register to its end
// (about 0 when a check on record made it unneeded; 0 while it runs).
func (m *Module) CheckTook() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checkTook
}

// without1 returns insts without inst.
func without1(insts []*instance, inst *instance) []*instance {
	out := insts[:0:0]
	for _, x := range insts {
		if x != inst {
			out = append(out, x)
		}
	}
	return out
}
