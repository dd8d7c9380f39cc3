// Package devkit is the logic behind `skillhost plugin`: it scaffolds a new
// plugin in Go, AssemblyScript or WAT (New), builds a plugin folder into its
// .wasm with the toolchain its files call for (Build), describes a module and
// what the host does with each of its imports (Inspect), checks a plugin
// folder without running it (Validate) and runs every manifest example in
// the real sandbox, checking its expected output or error (Test).
//
//	sc, err := devkit.New(devkit.NewOptions{Name: "hello", SDK: sdk.Source})
//	res, err := devkit.Build(ctx, sc.Dir, devkit.BuildOptions{Progress: os.Stderr})
//	rep, err := devkit.Test(ctx, sc.Dir, devkit.TestOptions{Out: os.Stdout})
//	if err == nil && rep.Failed > 0 { … }
//
// The functions are safe to call concurrently on different folders. Build
// runs the tools from PATH: `go` (or BuildOptions.GoBin) with GOOS=wasip1
// GOARCH=wasm and GOWORK=off, so a plugin folder builds from its own go.mod;
// `npm`; `wat2wasm`. A missing tool or a folder it cannot build is an error
// wrapping ErrCannotBuild that says what to do instead.
package devkit
