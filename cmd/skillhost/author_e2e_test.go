package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginAuthorFromTheBinaryAlone is "plugin authors anywhere": only the
// skillhost binary, copied into an empty folder, with a Go toolchain that
// cannot see this checkout (its own HOME, GOPATH and module cache, GOFLAGS
// empty; github.com/extism/go-pdk v1.1.3 is fetched through a module proxy
// made of this machine's module download cache, so no network is needed).
// It scaffolds, unit-tests, builds and tests a Go plugin, then an
// AssemblyScript and a WAT one, serves the folder and calls each skill
// through the running host.
func TestPluginAuthorFromTheBinaryAlone(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go toolchain not on PATH")
	}
	work, home := t.TempDir(), t.TempDir()
	bin := filepath.Join(work, "skillhost")
	copyExecutable(t, binPath, bin)
	env := authorEnv(t, goBin, home)
	run := func(dir string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = dir, env
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}

	// Go, with the SDK the binary carries.
	out := run(work, bin, "plugin", "new", "greeter")
	if !strings.Contains(out, "sdk: ./sdk (a copy of the SDK of skillhost") {
		t.Errorf("plugin new does not say it copied the SDK:\n%s", out)
	}
	gomod, _ := os.ReadFile(filepath.Join(work, "greeter", "go.mod"))
	if root := filepath.Dir(filepath.Dir(sdkDir(t))); strings.Contains(string(gomod), root) || strings.Contains(string(gomod), "replace github.com/skillhost/skillhost/sdk => ./sdk\n") == false {
		t.Errorf("go.mod names a path of this machine or does not use ./sdk:\n%s", gomod)
	}
	run(filepath.Join(work, "greeter"), goBin, "test", "./...")
	run(work, bin, "plugin", "build", "greeter")
	if out := run(work, bin, "plugin", "test", "greeter"); !strings.HasSuffix(out, "3 passed, 0 failed\n") {
		t.Errorf("plugin test greeter:\n%s", out)
	}
	// Beyond Go.
	skills := map[string]string{"greeter_hello": `"greeting": "Hello, Ada."`}
	for _, l := range []struct{ lang, tool, name, skill, passed, greeting string }{
		{"assemblyscript", "npm", "as-greeter", "as_greeter_hello", "3 passed", "Hello, Ada."},
		{"wat", "wat2wasm", "wat-greeter", "wat_greeter_hello", "2 passed", "Hello from WebAssembly!"},
	} {
		if !toolFor(t, l.tool) {
			continue
		}
		run(work, bin, "plugin", "new", l.name, "--lang", l.lang)
		run(work, bin, "plugin", "build", l.name)
		if out := run(work, bin, "plugin", "test", l.name); !strings.HasSuffix(out, l.passed+", 0 failed\n") {
			t.Errorf("plugin test %s:\n%s", l.name, out)
		}
		skills[l.skill] = `"greeting": "` + l.greeting + `"`
	}

	// Serve the folder and call every skill through the host.
	serve := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--plugins", work, "--data", filepath.Join(home, "data"))
	serve.Env = env
	h := startServe(t, serve)
	run(work, bin, "call", "--url", h.url, "_cleveragents/session/create", `{"session_id":"author"}`)
	for skill, want := range skills {
		out := run(work, bin, "call", "--url", h.url, "_cleveragents/skill/execute",
			`{"session_id":"author","skill_id":"`+skill+`","skill_params":{"name":"Ada"}}`)
		if !strings.Contains(out, want) {
			t.Errorf("skill/execute %s:\n%s\nwant %s", skill, out, want)
		}
	}
}

// authorEnv is an environment that cannot see this checkout: a fresh HOME,
// GOPATH and module cache, no GOFLAGS, no workspace, a module proxy read
// from this machine's module download cache, and this machine's build and
// npm caches (content-addressed: they hold no source the build could use by
// path).
func authorEnv(t *testing.T, goBin, home string) []string {
	t.Helper()
	goEnv := func(key string) string {
		out, err := exec.Command(goBin, "env", key).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", key, err)
		}
		return strings.TrimSpace(string(out))
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + filepath.Dir(goBin) + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
		"GOPATH=" + filepath.Join(home, "go"),
		"GOMODCACHE=" + filepath.Join(home, "go", "pkg", "mod"),
		"GOFLAGS=", "GOWORK=", "GOTOOLCHAIN=local", "GOSUMDB=off",
		"GOPROXY=file://" + filepath.Join(goEnv("GOMODCACHE"), "cache", "download"),
		"GOCACHE=" + goEnv("GOCACHE"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"TMPDIR=" + os.TempDir(),
	}
	if realHome, err := os.UserHomeDir(); err == nil {
		env = append(env, "npm_config_cache="+filepath.Join(realHome, ".npm"))
	}
	return env
}

// toolFor reports whether tool is on PATH; in CI (CI=true), where .ci/run
// installs it, its absence fails the test.
func toolFor(t *testing.T, tool string) bool {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not on PATH; .ci/run must install it", tool)
		}
		t.Logf("%s is not on PATH: its scaffold is not tried (CI installs it)", tool)
		return false
	}
	return true
}

func copyExecutable(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
