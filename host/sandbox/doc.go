// Package sandbox runs untrusted WebAssembly plugins (Extism go-sdk on wazero)
// with a deadline, a memory cap, an output cap and a bounded instance pool,
// and classifies every failure into a *fault.Error.
//
// A Runtime owns the on-disk compilation cache shared by every module. Load
// compiles a module once, checks its imports, exports and declared memory,
// and creates its warm instances. Module.Call borrows an instance from the
// module's pool, runs one export under the call's deadline, and returns the
// instance, or discards it when the guest can no longer be trusted (timeout,
// cancellation, trap, memory failure).
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
//	output larger than the cap           ResourceExhausted  output_limit
//	no free instance within QueueWait    ResourceExhausted  pool_saturated
//	guest returned an error (error_set)  SkillFailed        plugin_error
//	trap, panic, stack overflow, exit    SkillFailed        trap
//	export not found                     InvalidParams      unknown_skill
//
// Guests get no network, no files and no environment: no Extism allowed
// hosts or paths are configured, WASI sees only the program name as its
// argument, and only ModuleSpec.Mounts (read-only) are visible as files.
//
// Thread safety: Runtime and Module are safe for concurrent use. Each
// instance runs one call at a time; the pool enforces that.
package sandbox
