package sandbox

import (
	"context"
	"fmt"
	"slices"
	"strings"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// extismEnv is the module name of Extism's host environment.
const extismEnv = "extism:host/env"

// extismEnvFuncs are the functions go-sdk v1.7.1 exports from
// "extism:host/env" (host.go, instantiateEnvModule).
var extismEnvFuncs = []string{
	"alloc", "free", "load_u8", "input_load_u8", "store_u64", "store_u8", "input_set", "output_set",
	"input_length", "input_offset", "output_length", "output_offset", "length", "length_unsafe", "reset",
	"error_set", "error_get", "memory_bytes", "input_load_u64", "load_u64",
	"config_get", "var_get", "var_set", "http_request", "http_status_code", "http_headers", "get_log_level",
	"log_trace", "log_debug", "log_info", "log_warn", "log_error",
}

// baseImports returns the "module.name" set every plugin may import: WASI
// preview 1 (read from wazero itself) and Extism's env.
func baseImports(ctx context.Context) (map[string]bool, error) {
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return nil, fmt.Errorf("listing WASI functions: %w", err)
	}
	set := map[string]bool{}
	for name := range r.Module(wasi_snapshot_preview1.ModuleName).ExportedFunctionDefinitions() {
		set[wasi_snapshot_preview1.ModuleName+"."+name] = true
	}
	for _, name := range extismEnvFuncs {
		set[extismEnv+"."+name] = true
	}
	return set, nil
}

// BaseImports lists the "module.name" imports every plugin may use, sorted:
// WASI preview 1 and Extism's "extism:host/env". Host functions
// (ModuleSpec.HostFunctions) come on top.
func BaseImports(ctx context.Context) ([]string, error) {
	set, err := baseImports(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(set))
	for imp := range set {
		out = append(out, imp)
	}
	slices.Sort(out)
	return out, nil
}

// checkImports refuses a module importing anything the host does not
// provide, naming every missing import.
func checkImports(info ModuleInfo, base map[string]bool, hostFns []extism.HostFunction) error {
	provided := make(map[string]bool, len(hostFns))
	for _, f := range hostFns {
		provided[f.Namespace+"."+f.Name] = true
	}
	var missing []string
	for _, imp := range info.Imports {
		if !base[imp] && !provided[imp] {
			missing = append(missing, imp)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: imports not provided by the host: %s", ErrInvalidModule, strings.Join(missing, ", "))
	}
	return nil
}
