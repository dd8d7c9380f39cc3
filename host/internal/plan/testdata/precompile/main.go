// Command precompile loads a plugin module once through the host's sandbox
// with a wazero compilation cache, so test binaries built with -race (where
// compiling a Go guest takes tens of seconds) find it compiled. wazero keys
// its cache by its own version, which a -race test binary reports as "dev";
// the caller passes the version to use:
//
//	go run -ldflags=-X=github.com/tetratelabs/wazero/internal/version.version=dev ./testdata/precompile CACHE_DIR MODULE.wasm
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: precompile CACHE_DIR MODULE.wasm")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "precompile:", err)
		os.Exit(1)
	}
}

func run(cache, file string) error {
	ctx := context.Background()
	wasm, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{CacheDir: cache})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	m, err := rt.Load(ctx, sandbox.ModuleSpec{Name: "precompiled", Wasm: wasm,
		HostFunctions: hostfn.New(hostfn.Deps{}, hostfn.Grant{Plugin: "precompiled"})})
	if err != nil {
		return err
	}
	return m.Close(ctx)
}
