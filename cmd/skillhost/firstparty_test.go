package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// firstParty lists the plugins in plugins/ with their skill count.
var firstParty = map[string]int{
	"echo": 1, "text": 7, "data": 1, "json": 3, "fetch": 1, "markdown": 1, "notes": 3, "form": 1,
}

// TestFirstPartyPlugins runs `plugin build`, `plugin validate` and `plugin
// test` on every first-party plugin, through the binary (whose wazero
// compiles a module in a second or two; a -race test binary takes minutes).
// The fetch plugin's examples marked needs_network are skipped by default,
// with a line saying so; with --network they run against a loopback server
// its manifest is pointed at.
func TestFirstPartyPlugins(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go toolchain not on PATH")
	}
	root := filepath.Dir(sdkDir(t))
	ents, err := os.ReadDir(filepath.Join(root, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(root, "plugins", e.Name(), "plugin.yaml")); err == nil {
			if _, ok := firstParty[e.Name()]; !ok {
				t.Errorf("plugins/%s is not covered by this test; add it to firstParty", e.Name())
			}
		}
	}
	for name, skills := range firstParty {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := builtPlugin(t, filepath.Join(root, "plugins", name))
			mustCLI(t, "plugin", "validate", dir)
			if name == "fetch" {
				out := mustCLI(t, "plugin", "test", dir)
				if strings.Count(out, "(needs the network; run with --network)\n") != 2 || !strings.HasSuffix(out, "1 passed, 0 failed, 2 skipped\n") {
					t.Errorf("plugin test fetch, offline: want 2 examples skipped with a line each, 1 passed:\n%s", out)
				}
				dir = loopbackFetch(t, dir)
				out = mustCLI(t, "plugin", "test", "--network", "--allow-private", dir)
				if !strings.HasSuffix(out, "3 passed, 0 failed\n") {
					t.Errorf("plugin test --network fetch:\n%s", out)
				}
				return
			}
			out := mustCLI(t, "plugin", "test", dir)
			var passed int
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if _, err := fmt.Sscanf(lines[len(lines)-1], "%d passed, 0 failed", &passed); err != nil || passed < skills {
				t.Errorf("plugin test %s: want every example of %d skills to pass:\n%s", name, skills, out)
			}
		})
	}
}

// TestExtismRustTestPlugin: a plugin built by someone else's toolchain —
// Extism's own Rust test plugin count_vowels.wasm, from the extism/go-sdk
// module this repository builds with — validates and passes its examples,
// and plugin build says it cannot build a folder holding only a module.
func TestExtismRustTestPlugin(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/extism/go-sdk").Output()
	if err != nil {
		t.Fatalf("locating the extism/go-sdk module: %v", err)
	}
	dir := t.TempDir()
	copyExecutable(t, filepath.Join(strings.TrimSpace(string(out)), "wasm", "count_vowels.wasm"), filepath.Join(dir, "count_vowels.wasm"))
	writeFile(t, filepath.Join(dir, "plugin.yaml"), `name: count-vowels
version: 1.0.0
description: Extism's Rust test plugin
wasm: count_vowels.wasm
skills:
  - id: count_vowels
    description: Counts the vowels of its input (the JSON text, quotes included)
    examples:
      - {input: "hello world", output: {count: 3, total: 3, vowels: aeiouAEIOU}}
`)
	mustCLI(t, "plugin", "validate", dir)
	if out := mustCLI(t, "plugin", "test", dir); !strings.HasSuffix(out, "1 passed, 0 failed\n") {
		t.Errorf("plugin test:\n%s", out)
	}
	if _, errOut, code := runCLI(t, "plugin", "build", dir); code != 1 || !strings.Contains(errOut, "build it with your toolchain") {
		t.Errorf("plugin build of a folder with only a module: exit %d, %s", code, errOut)
	}
}

// builtPlugin builds the plugin folder src with the binary into a new
// folder holding a copy of its manifest and the module (src is not written).
func builtPlugin(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(src, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dst, "plugin.yaml"), string(data))
	mustCLI(t, "plugin", "build", src, "--out", filepath.Join(dst, filepath.Base(src)+".wasm"))
	return dst
}

// loopbackFetch rewrites the built fetch plugin's manifest so its network
// examples' URLs point at a local server allowed as "localhost:<port>".
func loopbackFetch(t *testing.T, dir string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!doctype html><title>Example Domain</title><p>"+strings.Repeat("x", 500)+"</p>")
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	base := fmt.Sprintf("http://localhost:%d", port)
	yaml := filepath.Join(dir, "plugin.yaml")
	data, err := os.ReadFile(yaml)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for old, repl := range map[string]string{
		`allowed_hosts: ["example.com", "*.example.org"]`:   fmt.Sprintf(`allowed_hosts: ["localhost:%d"]`, port),
		`{url: "https://example.com/"}`:                     `{url: "` + base + `/"}`,
		`{url: "https://www.example.org/", max_chars: 200}`: `{url: "` + base + `/page", max_chars: 200}`,
	} {
		if strings.Count(s, old) != 1 {
			t.Fatalf("%s: %q occurs %d times, want once", yaml, old, strings.Count(s, old))
		}
		s = strings.Replace(s, old, repl, 1)
	}
	writeFile(t, yaml, s)
	return dir
}

// mustCLI runs the binary and returns its stdout, failing on a non-zero exit.
func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("skillhost %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
