package devkit_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/devkit"
)

// firstParty lists the plugins in plugins/ with their skill count.
var firstParty = map[string]int{
	"echo": 1, "text": 7, "data": 1, "json": 3, "fetch": 1, "markdown": 1, "notes": 3,
}

// builtFirstParty builds plugins/<name> into a temp copy of its folder (the
// source tree is not written) once per test run.
func builtFirstParty(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join(repoRoot(t), "plugins", name)
	return sharedBuild(t, "plugin/"+name, func() (string, error) {
		dst := filepath.Join(shared.root, "plugins", name)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return "", err
		}
		data, err := os.ReadFile(filepath.Join(src, "plugin.yaml"))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dst, "plugin.yaml"), data, 0o644); err != nil {
			return "", err
		}
		// Build from the source folder, writing the module into the copy.
		_, err = devkit.Build(context.Background(), src, devkit.BuildOptions{Out: filepath.Join(dst, name+".wasm")})
		return dst, err
	})
}

// TestFirstPartyPlugins runs `plugin validate` and `plugin test` on every
// first-party plugin. The fetch plugin's network examples (needs_network)
// name example.com, which tests cannot reach: its manifest is pointed at a
// loopback server that answers for those URLs instead, and they run.
func TestFirstPartyPlugins(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir(filepath.Join(repoRoot(t), "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(repoRoot(t), "plugins", e.Name(), "plugin.yaml")); err == nil {
			if _, ok := firstParty[e.Name()]; !ok {
				t.Errorf("plugins/%s is not covered by this test; add it to firstParty", e.Name())
			}
		}
	}
	for name, skills := range firstParty {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := builtFirstParty(t, name)
			ctx := context.Background()
			opts := devkit.TestOptions{CacheDir: shared.cacheDir}
			if name == "fetch" {
				dir = loopbackFetch(t, dir)
				opts.AllowPrivate = devkit.PrivateRanges()
				opts.Network = true
			}
			rep, err := devkit.Validate(ctx, dir, devkit.ValidateOptions{CacheDir: shared.cacheDir})
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() {
				t.Errorf("validate problems: %q", rep.Problems)
			}
			var out strings.Builder
			opts.Out = &out
			tr, err := devkit.Test(ctx, dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Failed != 0 || tr.Skipped != 0 || tr.Passed < skills {
				t.Errorf("%d passed, %d failed (want every example of %d skills to pass):\n%s", tr.Passed, tr.Failed, skills, out.String())
			}
		})
	}
}

// TestFetchOffline: by default `plugin test plugins/fetch` skips the
// examples that need the network, with a line saying so, and passes.
func TestFetchOffline(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	rep, err := devkit.Test(context.Background(), builtFirstParty(t, "fetch"), devkit.TestOptions{Out: &out, CacheDir: shared.cacheDir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed != 1 || rep.Failed != 0 || rep.Skipped != 2 ||
		strings.Count(out.String(), "(needs the network; run with --network)\n") != 2 ||
		!strings.HasSuffix(out.String(), "1 passed, 0 failed, 2 skipped\n") {
		t.Errorf("%d passed, %d failed, %d skipped; output:\n%s", rep.Passed, rep.Failed, rep.Skipped, out.String())
	}
}

// loopbackFetch copies the built fetch plugin and rewrites its manifest so
// the examples' URLs point at a local server allowed as "localhost:<port>".
func loopbackFetch(t *testing.T, built string) string {
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
	base := fmt.Sprintf("http://localhost:%d", ln.Addr().(*net.TCPAddr).Port)
	dir := copyPlugin(t, built)
	yaml := filepath.Join(dir, "plugin.yaml")
	mustEdit(t, yaml, `allowed_hosts: ["example.com", "*.example.org"]`, fmt.Sprintf(`allowed_hosts: ["localhost:%d"]`, ln.Addr().(*net.TCPAddr).Port))
	mustEdit(t, yaml, `{url: "https://example.com/"}`, `{url: "`+base+`/"}`)
	mustEdit(t, yaml, `{url: "https://www.example.org/", max_chars: 200}`, `{url: "`+base+`/page", max_chars: 200}`)
	return dir
}
