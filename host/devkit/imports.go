package devkit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// Import modules a plugin may use.
const (
	extismUser  = "extism:host/user"
	maxReported = 10
)

// What the host does with an import (ImportView.Status).
const (
	ImportProvided = "provided" // the host provides it
	ImportRefused  = "refused"  // linked, but every call fails by design
	ImportUnknown  = "unknown"  // nothing provides it: the module does not load
)

// refusedImports are imports the host links but refuses by design, and why.
var refusedImports = map[string]string{
	"extism:host/env.http_request":         "Extism's own HTTP is off (no allowed hosts); use extism:host/user http_fetch",
	"extism:host/env.http_status_code":     "Extism's own HTTP is off; use extism:host/user http_fetch",
	"extism:host/env.http_headers":         "Extism's own HTTP is off; use extism:host/user http_fetch",
	"wasi_snapshot_preview1.sock_accept":   "no sockets are given to plugins",
	"wasi_snapshot_preview1.sock_recv":     "no sockets are given to plugins",
	"wasi_snapshot_preview1.sock_send":     "no sockets are given to plugins",
	"wasi_snapshot_preview1.sock_shutdown": "no sockets are given to plugins",
}

// ImportView is one import of a module and what the host does with it.
type ImportView struct {
	Import string `json:"import"` // "module.name"
	Status string `json:"status"` // ImportProvided, ImportRefused or ImportUnknown
	Note   string `json:"note,omitempty"`
}

// hostFunctionNames lists the functions skillhost offers in extism:host/user.
func hostFunctionNames() []string {
	var names []string
	for _, f := range hostfn.New(hostfn.Deps{}, hostfn.Grant{}) {
		names = append(names, f.Name)
	}
	slices.Sort(names)
	return names
}

// classifyImports says, once per import, whether the host provides it.
func classifyImports(ctx context.Context, imports []string) ([]ImportView, error) {
	base, err := sandbox.BaseImports(ctx)
	if err != nil {
		return nil, err
	}
	user := hostFunctionNames()
	out := []ImportView{}
	for _, imp := range slices.Compact(slices.Sorted(slices.Values(imports))) {
		v := ImportView{Import: imp, Status: ImportProvided}
		fn, isUser := strings.CutPrefix(imp, extismUser+".")
		switch {
		case refusedImports[imp] != "":
			v.Status, v.Note = ImportRefused, refusedImports[imp]
		case isUser && !slices.Contains(user, fn):
			v.Status, v.Note = ImportUnknown, "skillhost offers "+strings.Join(user, ", ")
		case isUser, slices.Contains(base, imp):
		default:
			v.Status, v.Note = ImportUnknown, "no host provides it"
		}
		out = append(out, v)
	}
	return out, nil
}

// checkImports reports imports no skillhost host provides (the module would
// not load).
func checkImports(ctx context.Context, info sandbox.ModuleInfo) ([]error, error) {
	views, err := classifyImports(ctx, info.Imports)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, v := range views {
		if v.Status != ImportUnknown {
			continue
		}
		mod, name := splitImport(v.Import)
		if mod == extismUser {
			errs = append(errs, fmt.Errorf("imports host function %q, which skillhost does not provide (%s)", name, v.Note))
		} else {
			errs = append(errs, fmt.Errorf("imports %s from module %q, which the host does not provide", name, mod))
		}
		if len(errs) >= maxReported {
			break
		}
	}
	return errs, nil
}

// splitImport splits "module.name" at its last dot (module names such as
// "extism:host/env" contain none, but may).
func splitImport(imp string) (mod, name string) {
	i := strings.LastIndex(imp, ".")
	if i < 0 {
		return "", imp
	}
	return imp[:i], imp[i+1:]
}

// importLines renders the imports for people, grouped by status and by
// module: "wasi_snapshot_preview1: args_get, fd_write; extism:host/user: log".
func importLines(views []ImportView) map[string]string {
	lines := map[string]string{}
	for _, status := range []string{ImportProvided, ImportRefused, ImportUnknown} {
		var parts []string
		byMod := map[string][]string{}
		var mods []string
		for _, v := range views {
			if v.Status != status {
				continue
			}
			if status != ImportProvided {
				parts = append(parts, v.Import+" ("+v.Note+")")
				continue
			}
			mod, name := splitImport(v.Import)
			if _, ok := byMod[mod]; !ok {
				mods = append(mods, mod)
			}
			byMod[mod] = append(byMod[mod], name)
		}
		for _, m := range mods {
			parts = append(parts, m+": "+strings.Join(byMod[m], ", "))
		}
		if len(parts) > 0 {
			lines[status] = strings.Join(parts, "; ")
		}
	}
	return lines
}
