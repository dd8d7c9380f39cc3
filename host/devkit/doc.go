// Package devkit is the logic behind `skillhost plugin`: it scaffolds a new
// Go plugin (New), builds a plugin folder into its .wasm with the Go
// toolchain (Build), describes a module (Inspect), checks a plugin folder
// without running it (Validate) and runs every manifest example in the real
// sandbox (Test).
//
//	res, err := devkit.Build(ctx, "plugins/text", devkit.BuildOptions{Progress: os.Stderr})
//	if err != nil { … }
//	rep, err := devkit.Test(ctx, "plugins/text", devkit.TestOptions{Out: os.Stdout})
//	if err == nil && rep.Failed > 0 { … }
//
// The functions are safe to call concurrently on different folders. Build
// runs `go` from PATH (or BuildOptions.GoBin) with GOOS=wasip1 GOARCH=wasm
// and GOWORK=off: a plugin folder is built from its own go.mod.
package devkit
