package devkit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// Import modules a plugin may use: WASI preview 1 and the Extism kernel are
// checked function by function when the sandbox loads the module; the
// skillhost host functions are checked here by name.
const (
	wasiModule  = "wasi_snapshot_preview1"
	extismEnv   = "extism:host/env"
	extismUser  = "extism:host/user"
	maxReported = 10
)

// hostFunctionNames lists the functions skillhost offers in extism:host/user.
func hostFunctionNames() []string {
	var names []string
	for _, f := range hostfn.New(hostfn.Deps{}, hostfn.Grant{}) {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// checkImports reports imports no skillhost host provides.
func checkImports(info sandbox.ModuleInfo) []error {
	user := hostFunctionNames()
	var errs []error
	for _, imp := range info.Imports {
		mod, name, _ := strings.Cut(imp, ".")
		// Module names may contain '.', so match the known prefixes.
		switch {
		case strings.HasPrefix(imp, wasiModule+"."), strings.HasPrefix(imp, extismEnv+"."):
			continue
		case strings.HasPrefix(imp, extismUser+"."):
			fn := strings.TrimPrefix(imp, extismUser+".")
			if !slices.Contains(user, fn) {
				errs = append(errs, fmt.Errorf("imports host function %q, which skillhost does not provide (it offers %s)",
					fn, strings.Join(user, ", ")))
			}
		default:
			errs = append(errs, fmt.Errorf("imports %s from module %q, which the host does not provide", name, mod))
		}
		if len(errs) >= maxReported {
			break
		}
	}
	return errs
}
