package plugin

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// fixture is the path of a committed sandbox test module (read-only).
func fixture(name string) string {
	return filepath.Join("..", "sandbox", "testdata", name+".wasm")
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pluginSpec describes a test plugin folder.
type pluginSpec struct {
	folder  string // folder name under the root; default name
	name    string
	version string // default 1.0.0
	module  string // fixture name; default hostile
	extra   string // extra top-level YAML (limits, sha256, ...)
	skills  string // the skills: YAML list; default one echo skill
}

// manifest renders the plugin's plugin.yaml.
func (p pluginSpec) manifest() string {
	if p.version == "" {
		p.version = "1.0.0"
	}
	if p.skills == "" {
		p.skills = "  - {id: " + p.name + "-echo, description: echoes, function: echo}\n"
	}
	return fmt.Sprintf("name: %s\nversion: %s\ndescription: test plugin\nwasm: plugin.wasm\n%s\nskills:\n%s",
		p.name, p.version, p.extra, p.skills)
}

// write creates (or rewrites) the plugin folder under root and returns it.
func (p pluginSpec) write(t *testing.T, root string) string {
	t.Helper()
	if p.folder == "" {
		p.folder = p.name
	}
	if p.module == "" {
		p.module = "hostile"
	}
	dir := filepath.Join(root, p.folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "plugin.wasm"), string(mustRead(t, fixture(p.module))))
	mustWrite(t, filepath.Join(dir, ManifestFile), p.manifest())
	return dir
}

// stage writes the plugin into a scratch folder next to root, so that it can
// be renamed into root in one step (how operators should deploy).
func (p pluginSpec) stage(t *testing.T, root string) string {
	t.Helper()
	staging := filepath.Join(filepath.Dir(root), "staging-"+filepath.Base(root))
	folder := p.folder
	if folder == "" {
		folder = p.name
	}
	_ = os.RemoveAll(filepath.Join(staging, folder))
	return p.write(t, staging)
}

func newTestRegistry(t *testing.T, pol config.Policy) *Registry {
	t.Helper()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(rt, RegistryOptions{Policy: pol, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Debounce: 50 * time.Millisecond})
	t.Cleanup(func() {
		if err := r.Close(ctx); err != nil {
			t.Errorf("registry Close: %v", err)
		}
		if err := rt.Close(ctx); err != nil {
			t.Errorf("runtime Close: %v", err)
		}
	})
	return r
}

func errLines(err error) []string {
	if err == nil {
		return nil
	}
	return strings.Split(err.Error(), "\n")
}
