// Package sandbox runs untrusted WebAssembly plugins (Extism go-sdk on wazero)
// with a deadline, a memory cap, an output cap and a bounded instance pool,
// and classifies every failure into a *fault.Error.
//
// A Runtime owns the on-disk compilation cache folder shared by every
// module. Register checks a module's imports, exports, declared memory and
// tables without compiling it, and runs its load check (compile,
// instantiate once) in the background, at most CompileWorkers at a time;
// Load also waits for it. Module.Call borrows an instance from the module's
// pool (creating one, and loading the module's code from the compilation
// cache first if it was released, within the call's deadline), runs one
// export under the call's deadline, and returns the instance, or discards
// it when the guest can no longer be trusted (timeout, cancellation, trap,
// memory failure, WASI exit). The runtime's sweeper closes instances unused
// for Limits.IdleTimeout (down to MinInstances), releases the code of
// modules left without one, and keeps resident code within MaxCodeBytes.
//
//	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: dir})
//	mod, err := rt.Load(ctx, sandbox.ModuleSpec{Name: "text", Wasm: wasm})
//	res, err := mod.Call(ctx, "uppercase", []byte(`{"text":"hi"}`))
//
// Failures are classified from evidence, never from the guest's words:
//
//	deadline exceeded                    Timeout            timeout
//	caller canceled                      Canceled           canceled
//	memory growth refused by the cap     ResourceExhausted  memory_limit
//	wazero's call stack exhausted        ResourceExhausted  memory_limit
//	no budget within QueueWait           ResourceExhausted  pool_saturated
//	output larger than the cap           ResourceExhausted  output_limit
//	no free instance within QueueWait    ResourceExhausted  pool_saturated
//	guest returned an error (error_set)  SkillFailed        plugin_error
//	trap, panic, exit≠0                  SkillFailed        trap
//	export not found                     InvalidParams      unknown_skill
//	deadline passed while compiling      InvalidState       plugin_loading
//	load check failed                    InvalidState       module_closed
//
// Module shape: wazero's decoder sizes slices from declared counts before
// it reads what they count (a function declaring 2^32-1 locals made it
// allocate 4 GiB while decoding and its compiler 32 GiB). Inspect walks
// every section wazero decodes and refuses a count or length that the
// module's bytes cannot hold, or that exceeds DefaultShapeLimits, with a
// *LimitError (wrapping ErrShapeLimit and ErrInvalidModule) naming the
// limit; Load inspects before it compiles.
//
// Memory budget: a runtime admits instances and calls against one budget
// (RuntimeConfig.MaxLiveBytes) at their worst case (Module.Cost): an
// instance reserves its linear memories at the cap, its tables at their
// maximum and wazero's per-global, per-function, per-element and
// per-data-segment costs while it lives; a call reserves wazero's call
// stack ceiling while it runs. What does not fit waits QueueWait and fails
// with pool_saturated; a module that could never fit is refused at Load
// (ErrOverBudget). A call that exhausts wazero's stack is memory_limit.
//
// Tables: wazero keeps wasm tables in Go memory that the memory meter does
// not see, so they are bounded at Load instead. The tables of a module share
// a budget of MemoryBytes/8 entries (wazero stores an entry as a uintptr, 8
// bytes). A module whose declared table minimums (allocated at
// instantiation) exceed it is refused with ErrInvalidModule, naming the
// table; so is a module importing a table (the host provides none). Every
// table then gets a maximum within the budget: the headroom left after the
// minimums is split evenly between the tables, and a table declaring no
// maximum (Go's wasip1 modules declare none) or a larger one gets its
// minimum plus its share, written into the module's table section before
// compiling. table.grow past it returns -1, as memory.grow past the memory
// cap does. ModuleInfo.Tables reports the tables as declared.
//
// WASI proc_exit closes the guest's module. Extism reports proc_exit(0) as
// a success, so the call returns the output the guest set before exiting;
// proc_exit(n), n != 0, is a trap carrying exit_code. Either way the
// instance is discarded (a wazero close notifier flags it), and the next
// call runs on a fresh instance.
//
// Guests get no network, no files and no environment: no Extism allowed
// hosts or paths are configured, WASI sees only the program name as its
// argument, and only ModuleSpec.Mounts (read-only) are visible as files.
//
// Thread safety: Runtime and Module are safe for concurrent use. Each
// instance runs one call at a time; the pool enforces that.
package sandbox
