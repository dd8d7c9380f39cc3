package plugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// mustFIFO makes a named pipe at path and returns what releases a reader
// stuck opening it (without the fix under test): opening it for reading
// and writing, which never blocks on Linux.
func mustFIFO(t *testing.T, path string) func() {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if f, err := os.OpenFile(path, os.O_RDWR, 0); err == nil {
			_ = f.Close()
		}
	}
}

// within runs f and fails the test if it has not returned after a generous
// bound (a guard against the hang under test, not a timing assertion);
// then it releases the FIFOs so that f, and the registry's cleanup, end.
func within(t *testing.T, what string, f func(), release ...func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return
	case <-time.After(60 * time.Second):
	}
	for released := false; !released; { // each open of a FIFO waits for its own writer
		for _, r := range release {
			r()
		}
		select {
		case <-done:
			released = true
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s blocked until its FIFOs got a writer (opening a FIFO for reading waits for one)", what)
}

// TestNonRegularPluginFilesAreLoadErrors: issue 20 finding 8. A FIFO named
// plugin.yaml (or as the module, or as plugin.sig) blocked loading in
// open(2): later plugins never loaded and the host could not shut down. It
// is now a load error naming the file, and every other plugin loads.
func TestNonRegularPluginFilesAreLoadErrors(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "a-good"}.write(t, root)
	releases := []func(){mustFIFO(t, filepath.Join(root, "b-fifo-manifest", ManifestFile))}
	wasm := pluginSpec{name: "c-fifo-wasm"}.write(t, root)
	if err := os.Remove(filepath.Join(wasm, "plugin.wasm")); err != nil {
		t.Fatal(err)
	}
	releases = append(releases, mustFIFO(t, filepath.Join(wasm, "plugin.wasm")))
	sig := pluginSpec{name: "d-fifo-sig"}.write(t, root)
	releases = append(releases, mustFIFO(t, filepath.Join(sig, SignatureFile)))
	pluginSpec{name: "e-good"}.write(t, root)

	r := newTestRegistry(t, config.Policy{})
	var err error
	within(t, "LoadDir", func() { err = r.LoadDir(context.Background(), root) }, releases...)
	for _, want := range []string{
		filepath.Join(root, "b-fifo-manifest", ManifestFile) + ": plugin.yaml is a named pipe (FIFO), not a regular file",
		"wasm: plugin.wasm is a named pipe (FIFO), not a regular file",
		filepath.Join(sig, SignatureFile) + ": plugin.sig is a named pipe (FIFO), not a regular file",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadDir error %v, want it to contain %q", err, want)
		}
	}
	snap := r.Snapshot()
	for _, name := range []string{"a-good", "e-good"} {
		if _, ok := snap.Plugin(name); !ok {
			t.Errorf("%s did not load next to the FIFOs", name)
		}
	}
	if len(snap.Plugins) != 2 {
		t.Errorf("%d plugins loaded, want the 2 good ones", len(snap.Plugins))
	}
	// The published mirror's marker and ReadInDir's callers share the rule.
	if _, err := ReadInDir(filepath.Join(root, "b-fifo-manifest"), ManifestFile, 1<<10); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadInDir of a FIFO: %v, want ErrNotRegular", err)
	}
}

// TestMountRefusesNonRegularFiles: a guest opening a FIFO in its mount gets
// an error at once (EACCES) instead of blocking the host thread past the
// call's deadline (wazero cannot interrupt a blocked open); regular files
// read as before.
func TestMountRefusesNonRegularFiles(t *testing.T) {
	t.Parallel()
	allowed := t.TempDir()
	data := filepath.Join(allowed, "data")
	mustWrite(t, filepath.Join(data, "file.txt"), "inside")
	release := mustFIFO(t, filepath.Join(data, "pipe"))
	root := t.TempDir()
	pluginSpec{name: "reader", module: "read_mount",
		extra:  "limits: {timeout: 2s}\npermissions: {allowed_paths: {/data: '" + data + "'}}",
		skills: "  - {id: read, description: reads a mounted file, function: read}\n"}.write(t, root)
	r := newTestRegistry(t, config.Policy{AllowedPathPrefixes: []string{allowed}})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	const eacces = 2 // WASI errno
	tests := []struct {
		path      string
		wantErrno byte
		wantData  string
	}{
		{"file.txt", 0, "inside"},
		{"pipe", eacces, ""},
	}
	for _, tt := range tests {
		var out []byte
		var err error
		within(t, "reading "+tt.path, func() {
			var res *Outcome
			if res, err = r.Execute(context.Background(), Call{SkillID: "read", Input: []byte(`"` + tt.path + `"`)}); err == nil {
				out = res.Output
			}
		}, release)
		if err != nil {
			t.Fatalf("read %s: %v", tt.path, err)
		}
		if len(out) == 0 || out[0] != tt.wantErrno || string(out[1:]) != tt.wantData {
			t.Errorf("read %s: errno %v, data %q; want errno %d, data %q", tt.path, out[:min(1, len(out))], out[min(1, len(out)):], tt.wantErrno, tt.wantData)
		}
	}
}
