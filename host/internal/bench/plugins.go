package bench

import (
	_ "embed"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// echoWasm is the trivial WAT plugin (testdata/echo.wat): exports echo and
// spin.
//
//go:embed testdata/echo.wasm
var echoWasm []byte

// EchoManifest is the manifest of the bench's echo plugin: skill "echo"
// (the input back) and skill "spin" (never returns; its 100 ms timeout
// stops it).
const EchoManifest = `name: bench
version: 1.0.0
description: Benchmark plugin - echo and a spinning loop
wasm: echo.wasm
limits:
  timeout: 2s
  memory: 16MiB
  output: 1MiB
  concurrency: 16
skills:
  - id: echo
    name: Echo
    description: Returns its input
    function: echo
  - id: spin
    name: Spin
    description: Never returns
    function: spin
`

// SpinTimeout is the timeout P7 calls the spin skill with.
const SpinTimeout = 100e6 // 100 ms, in nanoseconds (a time.Duration)

// WriteEchoPlugin writes the echo plugin into root/bench.
func WriteEchoPlugin(root string) error {
	dir := filepath.Join(root, "bench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "echo.wasm"), echoWasm, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(EchoManifest), 0o644)
}

// WriteCopies writes n plugins into root, echo-0 … echo-<n-1>, each the
// Go module wasm (a plugin built from Go with the SDK, whose export is
// "echo") with a custom section naming the copy, so every copy is a
// distinct module to the compilation cache and costs its own compile.
func WriteCopies(root string, wasm []byte, n int) error {
	for i := range n {
		name := fmt.Sprintf("echo-%d", i)
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		mod := withCustomSection(wasm, "skillhost-bench", []byte(name))
		if err := os.WriteFile(filepath.Join(dir, "echo.wasm"), mod, 0o644); err != nil {
			return err
		}
		manifest := fmt.Sprintf(`name: %[1]s
version: 1.0.0
description: Benchmark copy of the Go echo plugin
wasm: echo.wasm
limits:
  timeout: 2s
  memory: 32MiB
  concurrency: 4
skills:
  - id: %[1]s
    name: Echo %[2]d
    description: Returns its input
    function: echo
`, name, i)
		if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// withCustomSection appends a custom section (id 0) to a wasm module.
func withCustomSection(wasm []byte, name string, payload []byte) []byte {
	var body []byte
	body = binary.AppendUvarint(body, uint64(len(name)))
	body = append(body, name...)
	body = append(body, payload...)
	out := append([]byte{}, wasm...)
	out = append(out, 0)
	out = binary.AppendUvarint(out, uint64(len(body)))
	return append(out, body...)
}

// copyPlugin copies the plugin folder <Work>/<set>/<name> into root.
func (h *Harness) copyPlugin(set, name, root string) error {
	src, dst := filepath.Join(h.Work, set, name), filepath.Join(root, name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
