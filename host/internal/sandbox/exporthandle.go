package sandbox

import (
	"reflect"
	"sync"

	"github.com/tetratelabs/wazero/api"
)

// A guest export's wazero function (its call engine and a 10 KiB stack)
// costs a third of an echo call's allocations to make, so fastCall keeps
// the last export's handle across calls. wazero grows a call engine's stack
// (a Go []byte, doubled as a call goes deeper) and never shrinks it, so a
// handle kept after a deep recursion would hold that stack (up to ~100 MB)
// in an idle instance, where the memory budget no longer counts it. So the
// handle is dropped after any call that grew its stack beyond the size it
// was made with, and after any call that failed; the next call makes a new
// one. The stack is an unexported field of wazevo's callEngine (wazero
// v1.12.0, internal/engine/wazevo/call_engine.go), read with reflect as
// newFastCall reads go-sdk's fields. When the function is not that type
// (another engine, another wazero), its stack cannot be seen and the
// handle is made per call, as before: TestExportHandleIsKept fails so an
// upgrade cannot lose this silently.

// exportHandle is the kept handle of one export.
type exportHandle struct {
	name    string
	fn      api.Function
	stack   int // the length of fn's stack when made
	results int // how many results fn has
}

// callEngineStack is how a wazevo call engine's stack is found.
var callEngineStack struct {
	once  sync.Once
	typ   reflect.Type // *callEngine
	field int          // index of its stack []byte
}

const wazevoPkg = "github.com/tetratelabs/wazero/internal/engine/wazevo"

// stackLen is the length of fn's call stack; ok is false when fn is not a
// wazevo call engine with a stack []byte.
func stackLen(fn api.Function) (int, bool) {
	t := reflect.TypeOf(fn)
	cs := &callEngineStack
	cs.once.Do(func() {
		if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			return
		}
		e := t.Elem()
		if e.PkgPath() != wazevoPkg || e.Name() != "callEngine" {
			return
		}
		f, ok := e.FieldByName("stack")
		if !ok || len(f.Index) != 1 || f.Type != reflect.TypeFor[[]byte]() {
			return
		}
		cs.typ, cs.field = t, f.Index[0]
	})
	if cs.typ == nil || t != cs.typ {
		return 0, false
	}
	return reflect.ValueOf(fn).Elem().Field(cs.field).Len(), true
}

// export is the handle of the guest's export name: the kept one, else a
// new one (kept when its stack can be watched). nil if there is no such
// export.
func (f *fastCall) export(name string) api.Function {
	if f.kept.fn != nil && f.kept.name == name {
		return f.kept.fn
	}
	f.kept = exportHandle{}
	fn := f.main.ExportedFunction(name)
	if fn == nil {
		return nil
	}
	f.handlesMade++
	if n, ok := stackLen(fn); ok {
		f.kept = exportHandle{name: name, fn: fn, stack: n, results: len(fn.Definition().ResultTypes())}
	}
	return fn
}

// results is how many results the export fn has (wazero's ResultTypes
// allocates).
func (f *fastCall) results(fn api.Function) int {
	if f.kept.fn == fn {
		return f.kept.results
	}
	return len(fn.Definition().ResultTypes())
}

// called drops the kept handle after a call that failed or grew its stack.
func (f *fastCall) called(err error) {
	if f.kept.fn == nil {
		return
	}
	if n, _ := stackLen(f.kept.fn); err != nil || n != f.kept.stack {
		f.kept = exportHandle{}
	}
}
