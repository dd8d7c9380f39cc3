package assemble

import (
	"context"
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

func TestStoreModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := mustPluginDir(t)
	tests := []struct {
		name      string
		mode      StoreMode
		wantStore bool
	}{
		{"no store", NoStore, false},
		{"temporary store", TempStore, true},
		{"data store", DataStore, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := config.Defaults()
			cfg.Data = filepath.Join(t.TempDir(), "data")
			p, err := New(ctx, Spec{Config: cfg, Store: tt.mode})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if (p.Store != nil) != tt.wantStore {
				t.Fatalf("store %v, want one: %v", p.Store, tt.wantStore)
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
			if tt.mode == TempStore {
				if _, err := os.Stat(tmp); !os.IsNotExist(err) {
					t.Errorf("temporary store folder %s left behind: %v", tmp, err)
				}
			}
			if _, err := os.Stat(cfg.Data); (err == nil) != (tt.mode == DataStore) {
				t.Errorf("data folder exists: %v; want only with DataStore", err == nil)
			}
		})
	}
}

func TestBadNetPolicyBuildsNothing(t *testing.T) {
	t.Parallel()
	cfg := config.Defaults()
	cfg.Net.AllowPrivate = []string{"not-an-address"}
	cfg.Data = filepath.Join(t.TempDir(), "data")
	_, err := New(context.Background(), Spec{Config: cfg, Store: DataStore})
	if err == nil || !strings.Contains(err.Error(), "net.allow_private") {
		t.Fatalf("New = %v, want an error naming net.allow_private", err)
	}
	if _, err := os.Stat(cfg.Data); !os.IsNotExist(err) {
		t.Errorf("data folder created before the config was checked: %v", err)
	}
}
