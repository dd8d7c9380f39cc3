package assemble

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/store"
)

// mustPluginDir writes a plugin folder serving the echo export of the
// sandbox's hostile.wasm fixture.
func mustPluginDir(t *testing.T) string {
	t.Helper()
	wasm, err := os.ReadFile("../sandbox/testdata/hostile.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "echo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := "name: echo\nversion: 1.0.0\ndescription: d\nwasm: m.wasm\nskills:\n  - {id: echo, description: d}\n"
	if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Each purpose builds its components and no others: the store a plugin's
// context calls reach (none, a throwaway one, the data directory's), and a
// registry that loads and runs the plugin the same way under each.
func TestPurposes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := mustPluginDir(t)
	tests := []struct {
		name      string
		purpose   Purpose
		wantStore bool
	}{
		{"validate", Validate, false},
		{"test", Test, true},
		{"serve", Serve, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Defaults()
			cfg.Listen = "127.0.0.1:0"
			cfg.Data = filepath.Join(t.TempDir(), "data")
			cfg.Plugins = t.TempDir()
			p, err := Build(ctx, Spec{Config: cfg, Purpose: tt.purpose})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			if (p.Store != nil) != tt.wantStore {
				t.Fatalf("store %v, want one: %v", p.Store, tt.wantStore)
			}
			if (p.Addr() != nil) != (tt.purpose == Serve) {
				t.Errorf("listener %v; want one only to serve", p.Addr())
			}
			if p.Store != nil {
				if _, err := p.Store.CreateSession(ctx, store.Session{ID: "s1"}); err != nil {
					t.Errorf("CreateSession: %v", err)
				}
			}
			if _, err := p.Registry.Load(ctx, dir); err != nil {
				t.Fatalf("Load: %v", err)
			}
			out, err := p.Registry.Execute(ctx, plugin.Call{SkillID: "echo", Input: []byte(`{"x":1}`)})
			if err != nil || string(out.Output) != `{"x":1}` {
				t.Errorf("Execute = %v, %v", out, err)
			}
			tmp := p.tmp
			if err := p.Close(ctx); err != nil {
				t.Errorf("Close: %v", err)
			}
			if tt.purpose == Test {
				if _, err := os.Stat(tmp); !os.IsNotExist(err) {
					t.Errorf("temporary store folder %s left behind: %v", tmp, err)
				}
			}
			if _, err := os.Stat(cfg.Data); (err == nil) != (tt.purpose == Serve) {
				t.Errorf("data folder exists: %v; want only to serve", err == nil)
			}
		})
	}
}

// A component that fails takes apart, in reverse, every component built
// before it: the listener and the embedded store (its data folder is
// locked while open) are free again for the next start.
func TestFailedBuildClosesWhatItBuilt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := config.Defaults()
	cfg.Listen = mustFreeAddr(t)
	cfg.Data = filepath.Join(t.TempDir(), "data")
	cfg.Plugins = t.TempDir()
	bad := cfg
	bad.Identity.KeyFile = []string{filepath.Join(t.TempDir(), "missing.key")} // read after the store and the plugins' runtime
	if _, err := Build(ctx, Spec{Config: bad, Purpose: Serve}); err == nil || !strings.Contains(err.Error(), "identity.key_file") {
		t.Fatalf("Build with a missing key file = %v, want an error naming identity.key_file", err)
	}
	p, err := Build(ctx, Spec{Config: cfg, Purpose: Serve})
	if err != nil {
		t.Fatalf("Build after a failed one (listener or store left open?): %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// mustFreeAddr is a loopback address no one listens on.
func mustFreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestBadConfigBuildsNothing(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.Net.AllowPrivate = []string{"not-an-address"}
	cfg.Data = filepath.Join(t.TempDir(), "data")
	_, err := Build(context.Background(), Spec{Config: cfg, Purpose: Serve})
	if err == nil || !strings.Contains(err.Error(), "net.allow_private") {
		t.Fatalf("Build = %v, want an error naming net.allow_private", err)
	}
	if _, err := os.Stat(cfg.Data); !os.IsNotExist(err) {
		t.Errorf("data folder created before the config was checked: %v", err)
	}
}
