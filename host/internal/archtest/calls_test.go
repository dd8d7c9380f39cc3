package archtest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// TestCallsCarryNoCallbacks holds the call path to "calls only go down"
// (docs/ARCHITECTURE.md): what a caller hands the registry (plugin.Call)
// and the host functions (hostfn.Call) is data and sinks the lower layer
// owns, never a function of a higher layer. The rule, for each of those
// structs and every struct of this module reachable from their fields
// (through pointers, slices, arrays and maps):
//
//   - no field, exported or not, has a func type (nor a slice, map, array,
//     pointer or channel of one): a func field can close over anything, so
//     it would let a callee call back into whoever built the call;
//   - every interface-typed field has an interface declared in the package
//     of the struct holding it (the lower layer owns the sink: a caller
//     implements it, passes it down, and reads its own type after the call);
//   - every type in those interfaces' method signatures is predeclared, of
//     the standard library, or of a package the declaring package imports
//     (directly or not, per go list): so below it in the acyclic graph.
//
// A new func field, an interface of another (higher) package, or a sink
// whose methods name a higher package's type fails it. It cannot pass by
// accident: the test checks the rule finds the sinks it knows of, and that
// it refuses a struct built to break each clause.
func TestCallsCarryNoCallbacks(t *testing.T) {
	t.Parallel()
	below := importsBelow(mustGraph(t))
	sinks := map[string]bool{}
	for _, typ := range []reflect.Type{reflect.TypeFor[hostfn.Call](), reflect.TypeFor[plugin.Call]()} {
		for _, v := range callbackViolations(typ, below, sinks) {
			t.Error(v)
		}
	}
	want := map[string]bool{"hostfn.ProgressSink": true, "hostfn.SessionOpener": true, "plugin.TaskTurn": true}
	if diff := cmp.Diff(want, sinks); diff != "" {
		t.Errorf("the interface fields the rule checked (-known +found):\n%s", diff)
	}

	// The rule refuses what it is meant to refuse.
	type withFunc struct{ Progress func(hostfn.Progress) }
	type withFuncs struct{ Hooks []func() }
	type withForeignSink struct{ Out fmt.Stringer }
	type nested struct{ Inner *withFunc }
	for _, bad := range []reflect.Type{reflect.TypeFor[withFunc](), reflect.TypeFor[withFuncs](),
		reflect.TypeFor[withForeignSink](), reflect.TypeFor[nested]()} {
		if v := callbackViolations(bad, below, map[string]bool{}); len(v) == 0 {
			t.Errorf("the rule accepts %v", bad)
		}
	}
}

// importsBelow maps each package path of the module to the set of packages
// it imports, directly or not (full import paths).
func importsBelow(graph map[string][]string) map[string]map[string]bool {
	full := map[string][]string{}
	for p, imps := range graph {
		full[abs(p)] = imps
	}
	out := map[string]map[string]bool{}
	var walk func(p string, seen map[string]bool)
	walk = func(p string, seen map[string]bool) {
		for _, imp := range full[p] {
			if !seen[imp] {
				seen[imp] = true
				walk(imp, seen)
			}
		}
	}
	for p := range full {
		seen := map[string]bool{}
		walk(p, seen)
		out[p] = seen
	}
	return out
}

func abs(rel string) string {
	if rel == "" {
		return module
	}
	return module + "/" + rel
}

// callbackViolations checks typ (a struct) and the module's structs
// reachable from it against the rule of TestCallsCarryNoCallbacks; sinks
// collects the interface fields it checked ("pkg.Name").
func callbackViolations(typ reflect.Type, below map[string]map[string]bool, sinks map[string]bool) []string {
	var out []string
	seen := map[reflect.Type]bool{}
	var visit func(st reflect.Type)
	visit = func(st reflect.Type) {
		if seen[st] {
			return
		}
		seen[st] = true
		for i := range st.NumField() {
			f := st.Field(i)
			where := fmt.Sprintf("%v.%s", st, f.Name)
			ft := f.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array ||
				ft.Kind() == reflect.Map || ft.Kind() == reflect.Chan {
				if ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.Func {
					break
				}
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Func:
				out = append(out, fmt.Sprintf("%s is a func (%v): a callback; pass a value or a sink interface of %s down", where, f.Type, st.PkgPath()))
			case ft.Kind() == reflect.Interface:
				if ft.PkgPath() != st.PkgPath() {
					out = append(out, fmt.Sprintf("%s is %v, an interface not declared in %s: the lower layer owns its sinks", where, ft, st.PkgPath()))
					continue
				}
				sinks[shortName(ft)] = true
				for j := range ft.NumMethod() {
					m := ft.Method(j)
					for _, named := range namedIn(m.Type) {
						if !allowedBelow(named.PkgPath(), ft.PkgPath(), below) {
							out = append(out, fmt.Sprintf("%s: method %s of %v uses %v, a type of a package %s does not import", where, m.Name, ft, named, ft.PkgPath()))
						}
					}
				}
			case ft.Kind() == reflect.Struct && strings.HasPrefix(ft.PkgPath(), module):
				visit(ft)
			}
		}
	}
	visit(typ)
	return out
}

// namedIn lists the named types in a func type's parameters and results
// (through pointers, slices, arrays, maps and channels).
func namedIn(fn reflect.Type) []reflect.Type {
	var out []reflect.Type
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		switch {
		case t.Name() != "":
			out = append(out, t)
		case t.Kind() == reflect.Map:
			add(t.Key())
			add(t.Elem())
		case t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Chan:
			add(t.Elem())
		case t.Kind() == reflect.Func:
			for i := range t.NumIn() {
				add(t.In(i))
			}
			for i := range t.NumOut() {
				add(t.Out(i))
			}
		}
	}
	add(fn)
	return out
}

// allowedBelow reports whether a type of package pkg may appear in a sink
// of package owner: predeclared, the standard library, owner itself, or a
// package owner imports.
func allowedBelow(pkg, owner string, below map[string]map[string]bool) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return pkg == "" || !strings.Contains(first, ".") || pkg == owner || below[owner][pkg]
}

func shortName(t reflect.Type) string {
	parts := strings.Split(t.PkgPath(), "/")
	return parts[len(parts)-1] + "." + t.Name()
}
