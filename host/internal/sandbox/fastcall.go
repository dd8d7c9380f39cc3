package sandbox

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Extism's Plugin.CallWithContext looks every function it calls up by name
// on every call — reset, alloc and input_set for the input, the export,
// error_get, output_offset and output_length — and so do the
// extism:host/env functions a guest calls to read its input and write its
// output. Each lookup is wazero's ExportedFunction, which builds a new
// function with its own call engine and a 10 KiB stack: ~20 of them for one
// echo call, most of a call's CPU and garbage. go-sdk (v1.7.1) offers no
// call path that keeps its function handles, so fastCall is
// CallWithContext's logic over handles created once per instance: the
// Extism kernel's functions (trusted code without imports, bounded stack)
// are kept for the instance's life and handed to the env functions through
// the call context, where Extism looks the kernel up; the guest's export is
// kept across calls but dropped after one that grew its stack, so a deep
// recursion's stack is never kept by an idle instance (the memory budget
// counts it only while the call runs; exporthandle.go). The whole kernel is
// done in Go (kernelgo.go), so its handles make no wazero function at all.
// See docs/RATIONALE.md ("Why does the sandbox call Extism's kernel
// itself?").

// fastCall runs calls on one instance. Like the instance, it serves one
// call at a time.
type fastCall struct {
	plugin      *extism.Plugin
	kernel      *kernelView
	main        api.Module
	initialized bool // the guest runtime's initialisation ran
	kept        exportHandle
	handlesMade int // export handles made, for tests
}

// kernelView is the Extism kernel instance whose ExportedFunction returns
// handles made once. Extism's env functions take the kernel from the call
// context (PluginCtxKey("extism")), so they use these handles too.
type kernelView struct {
	api.Module
	funcs map[string]api.Function
	defs  map[string]api.FunctionDefinition // the kernel's exports, read on first use
}

// ExportedFunction returns the kernel function name, creating its handle on
// first use: the Go version (all of them: see kernelgo.go), else the
// kernel's own.
func (k *kernelView) ExportedFunction(name string) api.Function {
	if f, ok := k.funcs[name]; ok {
		return f
	}
	if k.defs == nil {
		k.defs = k.Module.ExportedFunctionDefinitions()
	}
	var f api.Function
	def, exported := k.defs[name]
	run, inGo := kernelInGo[name]
	switch {
	case exported && inGo:
		f = &goKernelFunc{def: def, mem: k.Memory(), run: run}
	default:
		if f = k.Module.ExportedFunction(name); f == nil {
			return nil
		}
	}
	k.funcs[name] = f
	return f
}

var apiModuleType = reflect.TypeFor[api.Module]()

// newFastCall reads the kernel and main module of p: go-sdk keeps them in
// the unexported fields extism and mainModule. ok is false when go-sdk's
// layout differs from the one this was written for (then the sandbox calls
// CallWithContext; TestFastCallIsUsed fails so an upgrade cannot lose it
// silently).
func newFastCall(p *extism.Plugin) (*fastCall, bool) {
	v := reflect.ValueOf(p).Elem()
	field := func(name string) api.Module {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Type() != apiModuleType {
			return nil
		}
		m, _ := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(api.Module)
		return m
	}
	kernel, main := field("extism"), field("mainModule")
	if kernel == nil || main == nil {
		return nil, false
	}
	return &fastCall{plugin: p, kernel: &kernelView{Module: kernel, funcs: map[string]api.Function{}}, main: main}, true
}

// call is Plugin.CallWithContext with the kernel's handles kept: the same
// context values, input, guest runtime initialisation, exit-code handling,
// error and output reading. A plugin's own error (error_set) comes back as
// errors.New of its text, as from Extism.
func (f *fastCall) call(ctx context.Context, name string, input []byte) (uint32, []byte, error) {
	if f.main.IsClosed() {
		return 0, nil, errors.New("module is closed")
	}
	cc := &callValues{Context: ctx, kernel: f.kernel, plugin: f.plugin}
	ctx = cc
	// The kernel's bookkeeping is never interrupted (Extism runs it without
	// a deadline), so the kernel is never left half-way; only the guest's
	// own code runs under the call's deadline.
	book := context.WithoutCancel(ctx)
	offset, err := f.setInput(book, input)
	if err != nil {
		return 1, nil, err
	}
	cc.inputOffset, cc.inputSet = offset, true
	fn := f.export(name)
	if fn == nil {
		return 1, nil, fmt.Errorf("unknown function: %s", name)
	}
	if n := f.results(fn); n > 1 {
		return 1, nil, fmt.Errorf("function %s has %v results, expected 0 or 1", name, n)
	}
	if !f.initialized && name != "_start" && name != "_initialize" {
		if err := f.initGuest(ctx); err != nil {
			return 1, nil, fmt.Errorf("failed to initialize runtime: %v", err)
		}
		f.initialized = true
	}
	res, err := fn.Call(ctx)
	f.called(err)
	// Only a bare exit error is an exit, as in go-sdk (a trap wraps its cause).
	if exitErr, ok := err.(*sys.ExitError); ok { //nolint:errorlint // go-sdk's exact test
		if exitErr.ExitCode() == 0 {
			err = nil
		}
		if len(res) == 0 {
			res = []uint64{api.EncodeU32(exitErr.ExitCode())}
		}
	}
	rc := uint32(0)
	switch {
	case len(res) > 0:
		rc = api.DecodeU32(res[0])
	case err != nil:
		rc = 1
	}
	if err != nil {
		return rc, nil, err
	}
	var pluginErr error
	if msg := f.errorText(book); msg != "" {
		pluginErr = errors.New(msg)
	}
	out, err := f.output()
	if err != nil {
		return rc, nil, errors.Join(pluginErr, fmt.Errorf("failed to get output: %v", err))
	}
	return rc, out, pluginErr
}

// callValues is the call's context with the values go-sdk's env functions
// read (the kernel, the plugin and, once set, the input's offset), one
// allocation where context.WithValue makes one per value.
type callValues struct {
	context.Context
	kernel      api.Module
	plugin      *extism.Plugin
	inputOffset uint64
	inputSet    bool
}

// Value answers go-sdk's keys, the parent context the others.
func (c *callValues) Value(key any) any {
	switch key {
	case extism.PluginCtxKey("extism"):
		return c.kernel
	case extism.PluginCtxKey("plugin"):
		return c.plugin
	case extism.InputOffsetKey("inputOffset"):
		if c.inputSet {
			return c.inputOffset
		}
	}
	return c.Context.Value(key)
}

// initGuest runs the guest runtime's initialisation as go-sdk does on a
// first call: Haskell's hs_init (after _initialize, if any), else WASI's
// reactor _initialize or command __wasm_call_ctors when it takes no
// parameters, else nothing.
func (f *fastCall) initGuest(ctx context.Context) error {
	if hs := f.main.ExportedFunction("hs_init"); hs != nil {
		if r := f.main.ExportedFunction("_initialize"); r != nil {
			_, _ = r.Call(ctx) // go-sdk logs this failure and goes on
		}
		_, err := hs.Call(ctx, 0, 0)
		return err
	}
	for _, name := range []string{"_initialize", "__wasm_call_ctors"} {
		if fn := f.main.ExportedFunction(name); fn != nil && len(fn.Definition().ParamTypes()) == 0 {
			_, err := fn.Call(ctx)
			return err
		}
	}
	return nil
}

// setInput resets the kernel and copies input into its memory, returning
// the input's offset. An input the kernel's memory cannot take (its
// alloc gives 0) fails here: writing it at 0, as go-sdk does, would put
// the caller's bytes over the kernel's MemoryRoot.
func (f *fastCall) setInput(ctx context.Context, input []byte) (uint64, error) {
	k := kernelMem(f.kernel.Memory())
	if err := kReset(&k); err != nil {
		return 0, fmt.Errorf("extism reset: %w", err)
	}
	n := uint64(len(input))
	ptr, err := kAlloc(ctx, &k, n)
	if err != nil {
		return 0, fmt.Errorf("extism alloc: %w", err)
	}
	if ptr == 0 && n > 0 || !k.fits(uint32(ptr), uint32(n)) || uint64(uint32(n)) != n {
		return 0, fmt.Errorf("extism input of %d bytes does not fit the kernel's memory", len(input))
	}
	copy(k.b[ptr:], input)
	if err := kSetRange(&k, rootInputOffset, rootInputLength, ptr, n); err != nil {
		return 0, fmt.Errorf("extism input_set: %w", err)
	}
	return ptr, nil
}

// errorText is the error the guest set (error_set), "" if none.
func (f *fastCall) errorText(ctx context.Context) string {
	k := kernelMem(f.kernel.Memory())
	if k.root() != nil {
		return ""
	}
	off := k.get(rootError)
	if off == 0 {
		return ""
	}
	n, err := kLength(ctx, &k, off)
	if err != nil {
		return ""
	}
	b, _ := f.kernel.Memory().Read(uint32(off), uint32(n))
	return string(b)
}

// output copies the guest's output out of the kernel's memory.
func (f *fastCall) output() ([]byte, error) {
	k := kernelMem(f.kernel.Memory())
	if err := k.root(); err != nil {
		return nil, err
	}
	off, n := k.get(rootOutputOffset), k.get(rootOutputLength)
	b, ok := f.kernel.Memory().Read(uint32(off), uint32(n))
	if !ok {
		return nil, fmt.Errorf("output of %d bytes at %d is outside the kernel's memory", n, off)
	}
	return append([]byte(nil), b...), nil // Read is a view of memory the next call reuses
}
