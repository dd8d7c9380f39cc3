package sandbox

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/skillhost/skillhost/host/fault"
)

// Module is a registered plugin: its validated description, its compiled
// code while it is in use (see RuntimeConfig.MaxCodeBytes and
// Limits.IdleTimeout) and its instance pool. It is safe for concurrent
// use; at most Limits.Concurrency calls run at once.
type Module struct {
	name        string
	rt          *Runtime
	limits      Limits
	info        ModuleInfo
	tableMaxes  []uint32
	config      map[string]string
	hostFns     []extism.HostFunction
	wasm        []byte                 // nil when source reads it again
	source      func() ([]byte, error) // ModuleSpec.Source
	digest      [32]byte               // SHA-256 of the module's bytes
	checkKey    string
	modCfg      wazero.ModuleConfig
	logger      *slog.Logger
	guestLog    *guestLog
	stats       counters
	cost        Cost
	keepChecked bool // Load: the load check's code and instance stay for a first call
	registered  time.Time

	slots chan struct{} // one token per running call
	done  chan struct{} // closed when Close starts

	mu        sync.Mutex
	code      *code         // the resident compiled code; nil when released
	op        *compileOp    // the compile in flight
	checked   chan struct{} // closed when the load check ended
	checkErr  error         // the load check's failure
	checkTook time.Duration // from Register to the check's end
	idle      []*instance   // instances ready for a call; the last returned on top
	live      int           // instances alive, idle or busy
	pins      int           // calls (or the sweeper) creating an instance from code
	unpinned  sync.Cond     // signaled (on mu) when pins drops to 0 after Close
	closed    bool
	lastUsed  atomic.Int64  // unix ns of the last call's end (or the code's arrival)
	useSeq    atomic.Uint64 // the runtime's use counter then: the code budget's LRU order

	closeOnce sync.Once
	closeErr  error
}

// Result is the outcome of a successful call.
type Result struct {
	// Output is the plugin's output (at most Limits.OutputBytes).
	Output []byte
	// Duration is the call's wall time, instantiation included.
	Duration time.Duration
	// MemoryPeakBytes is the high-water mark of the instance's linear memory
	// (plugin plus Extism kernel memory) after the call. Linear memory never
	// shrinks, so for a pooled instance it includes earlier calls' growth.
	MemoryPeakBytes uint64
	// Fresh is true when the instance was created for this call (no idle
	// instance was free); such a call pays instantiation, and compiling (or
	// loading from the compilation cache) when the code was not resident.
	Fresh bool
}

func newModule(rt *Runtime, spec ModuleSpec, limits Limits, info ModuleInfo, maxes []uint32, cost Cost, keep bool) *Module {
	m := &Module{
		cost:        cost,
		name:        spec.Name,
		rt:          rt,
		limits:      limits,
		info:        info,
		tableMaxes:  maxes,
		config:      spec.Config,
		hostFns:     spec.HostFunctions,
		source:      spec.Source,
		digest:      spec.SHA256,
		modCfg:      moduleConfig(spec.Name, spec.Mounts),
		logger:      rt.logger,
		guestLog:    newGuestLog(rt.logger, spec.Name),
		keepChecked: keep,
		registered:  time.Now(),
		slots:       make(chan struct{}, limits.Concurrency),
		done:        make(chan struct{}),
		checked:     make(chan struct{}),
	}
	m.unpinned.L = &m.mu
	if m.digest == ([32]byte{}) {
		m.digest = sha256.Sum256(spec.Wasm)
	}
	if m.source == nil {
		m.wasm = spec.Wasm
	}
	m.checkKey = checkKey(m.digest, maxes)
	m.lastUsed.Store(m.registered.UnixNano())
	m.stats.parent = &rt.stats
	return m
}

// Info describes the module's exports, imports and declared memory.
func (m *Module) Info() ModuleInfo { return m.info }

// Name is the module's name.
func (m *Module) Name() string { return m.name }

// Limits are the module's effective limits (defaults filled).
func (m *Module) Limits() Limits { return m.limits }

// Cost is what the module counts against its runtime's memory budget.
type Cost struct {
	// Instance is the most host memory one idle instance can hold: its
	// linear memories at the cap (the plugin's and Extism's), its tables
	// at their effective maximums, and wazero's per-instance share of its
	// globals, functions, element items and data segments.
	Instance uint64 `json:"instance_bytes"`
	// Call is the most a running call can add: wazero's call stack at its
	// ceiling (about 150 MB, a fixed wazero limit) plus the module's
	// largest frame.
	Call uint64 `json:"call_bytes"`
}

// Cost is what one instance and one running call of the module count
// against the runtime's budget.
func (m *Module) Cost() Cost { return m.cost }

// Stats returns the module's counters.
func (m *Module) Stats() Stats {
	st := m.stats.snapshot()
	m.mu.Lock()
	defer m.mu.Unlock()
	st.InstancesIdle = uint64(len(m.idle))
	if m.code != nil {
		st.CodeBytes, st.CodeModules = m.code.bytes, 1
	}
	if m.op != nil {
		st.Compiling = 1
	}
	st.LastUsed = time.Unix(0, m.lastUsed.Load())
	return st
}

// CallOption adjusts one call.
type CallOption func(*callOptions)

type callOptions struct{ timeout time.Duration }

// Within caps the call's deadline at d when d is shorter than the module's
// Limits.Timeout (a caller's own timeout). d <= 0 keeps the limit.
func Within(d time.Duration) CallOption {
	return func(o *callOptions) {
		if d > 0 {
			o.timeout = min(o.timeout, d)
		}
	}
}

// Call runs the exported function with input under the module's limits and
// ctx. It is the one place a call's deadline is set: min(Limits.Timeout,
// Within) from now, and ctx's own deadline if earlier. The ctx reaches the
// module's host functions (attach per-call data to it before Call). Every
// failure is a *fault.Error (see the package documentation for the
// classification).
func (m *Module) Call(ctx context.Context, function string, input []byte, opts ...CallOption) (*Result, error) {
	if !m.info.HasExport(function) {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonUnknownSkill,
			"plugin %q has no exported function %q", m.name, function).With("plugin", m.name)
	}
	o := callOptions{timeout: m.limits.Timeout}
	for _, opt := range opts {
		opt(&o)
	}
	m.stats.call()
	res, err := m.call(ctx, function, input, o.timeout)
	if err != nil {
		m.stats.failure()
		return nil, err
	}
	return res, nil
}

func (m *Module) call(ctx context.Context, function string, input []byte, timeout time.Duration) (*Result, error) {
	if uint64(len(input)) > m.limits.MemoryBytes {
		return nil, fault.Newf(fault.ResourceExhausted, fault.ReasonMemoryLimit,
			"input of %d bytes exceeds the memory cap of %s", len(input), formatBytes(m.limits.MemoryBytes)).
			With("memory_limit_bytes", m.limits.MemoryBytes)
	}
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	m.stats.slotTaken()
	defer func() {
		m.stats.slotFreed()
		<-m.slots
	}()

	// The call's stack allowance, and a fresh instance's cost, come out of
	// the runtime's budget in one reservation (two would let calls holding
	// stack queue for instances behind calls queued for stack), waiting at
	// most QueueWait for room.
	inst, fresh := m.takeIdle(), false
	need := m.cost.Call
	if inst == nil {
		need += m.cost.Instance
	}
	if !m.rt.budget.reserveWithin(ctx, need, m.limits.QueueWait) {
		if inst != nil {
			m.putBack(ctx, inst, true, time.Now())
		}
		return nil, m.budgetFault(ctx, timeout)
	}
	defer m.rt.budget.release(m.cost.Call)

	// The deadline is measured from start, so a timeout fault reports the
	// limit itself (400ms, not 399ms when the clock ticked in between). It
	// covers loading the code and instantiating for a fresh instance.
	start := time.Now()
	callCtx, cancel := context.WithDeadline(ctx, start.Add(timeout))
	defer cancel()
	if inst == nil {
		c, ferr := m.pinCode(ctx, callCtx)
		if ferr != nil {
			m.rt.budget.release(m.cost.Instance)
			return nil, ferr
		}
		if inst = m.takeIdle(); inst != nil { // the load check's, which the call waited for
			m.unpin(false)
			m.rt.budget.release(m.cost.Instance)
		} else {
			var err error
			inst, err = m.newInstance(callCtx, c)
			m.unpin(err == nil)
			if err != nil {
				return nil, appliedDeadline(m.instantiateFault(ctx, callCtx, err), callCtx, start)
			}
			fresh = true
		}
	}
	before := inst.meter.Refusals()
	inst.log.reset()
	inst.running.ctx, inst.running.function = callCtx, function
	rc, out, err := inst.call(callCtx, function, input)
	inst.running.ctx, inst.running.function = nil, ""
	end := time.Now()
	dur := end.Sub(start)
	m.stats.notePeak(inst.meter.Peak())
	ferr, keep := m.classify(ctx, callCtx, inst, before, function, rc, out, err)
	peak := inst.meter.Peak()
	m.putBack(ctx, inst, keep, end)
	if ferr != nil {
		return nil, appliedDeadline(ferr, callCtx, start).With("plugin", m.name).With("function", function)
	}
	return &Result{Output: out, Duration: dur, MemoryPeakBytes: peak, Fresh: fresh}, nil
}

// acquire takes a call slot, waiting at most QueueWait.
func (m *Module) acquire(ctx context.Context) error {
	select {
	case <-m.done:
		return m.closedFault()
	default:
	}
	select {
	case m.slots <- struct{}{}:
	default:
		t := time.NewTimer(m.limits.QueueWait)
		defer t.Stop()
		select {
		case m.slots <- struct{}{}:
		case <-m.done:
			return m.closedFault()
		case <-ctx.Done():
			return ctxFault(ctx, m.limits.Timeout)
		case <-t.C:
			m.stats.saturation()
			return fault.Newf(fault.ResourceExhausted, fault.ReasonPoolSaturated,
				"plugin %q: all %d instances busy for %v", m.name, m.limits.Concurrency, m.limits.QueueWait).
				With("plugin", m.name).With("concurrency", m.limits.Concurrency)
		}
	}
	select {
	case <-m.done: // Close started while we waited: give the slot back.
		<-m.slots
		return m.closedFault()
	default:
		return nil
	}
}

// budgetFault is the refusal of a call the runtime's budget had no room
// for within QueueWait (or the caller's end, if that came first).
func (m *Module) budgetFault(ctx context.Context, timeout time.Duration) *fault.Error {
	if ctx.Err() != nil {
		return ctxFault(ctx, timeout)
	}
	m.stats.saturation()
	return fault.Newf(fault.ResourceExhausted, fault.ReasonPoolSaturated,
		"plugin %q: the host's sandbox memory budget (%s, sandbox.max_live_bytes) stayed in use by other instances for %v",
		m.name, formatMiB(m.rt.budget.total), m.limits.QueueWait).
		With("plugin", m.name).With("budget_bytes", m.rt.budget.total)
}

func (m *Module) closedFault() *fault.Error {
	return fault.Newf(fault.InvalidState, fault.ReasonModuleClosed, "plugin %q is closed", m.name).With("plugin", m.name)
}

// Close refuses new calls, waits for in-flight calls (until ctx ends, after
// which they are aborted), then frees every instance and the compiled
// code. A compile in flight frees what it built when it ends. It is
// idempotent.
func (m *Module) Close(ctx context.Context) error {
	m.closeOnce.Do(func() {
		close(m.done)
		var waitErr error
	wait:
		for range m.limits.Concurrency {
			select {
			case m.slots <- struct{}{}:
			case <-ctx.Done():
				waitErr = fmt.Errorf("closing plugin %q: in-flight calls aborted: %w", m.name, ctx.Err())
				break wait
			}
		}
		m.mu.Lock()
		m.closed = true
		if m.op != nil {
			m.op.cancel() // a queued compile gives up, a start function stops
		}
		// With every slot taken no call holds the code; the sweeper may be
		// creating a min instance from it (within Timeout): wait for it.
		for waitErr == nil && m.pins > 0 {
			m.unpinned.Wait()
		}
		insts, c := m.idle, m.code
		m.idle, m.code = nil, nil
		m.live -= len(insts)
		if c != nil {
			m.rt.removeResident(m, c.bytes)
		}
		m.checkDone(m.checkErrOr(errors.New("the module was closed")))
		m.mu.Unlock()
		for _, inst := range insts {
			inst.close(ctx)
			m.stats.instanceDiscarded()
		}
		if c != nil {
			c.close(ctx) // aborts calls still running when ctx ended
			m.stats.codeReleased()
			m.rt.collectSoon()
		}
		m.closeErr = waitErr
		m.rt.forget(m)
	})
	return m.closeErr
}

// checkErrOr is the load check's outcome for Close (m.mu held): its error,
// or err when it had not ended (nil when it succeeded).
func (m *Module) checkErrOr(err error) error {
	select {
	case <-m.checked:
		return m.checkErr
	default:
		return err
	}
}
