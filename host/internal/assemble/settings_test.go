package assemble

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

func TestSettingsConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	token, big := filepath.Join(dir, "token"), filepath.Join(dir, "big")
	if err := os.WriteFile(token, []byte("\n  tok-123 \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, []byte(strings.Repeat("x", config.MaxSettingValue+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KEY": "env-value", "HUGE": strings.Repeat("y", config.MaxSettingValue+1)}
	s := &Settings{getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, byName: map[string]config.PluginSettings{
		"w":      {Config: map[string]string{"units": "metric", "region": "us"}, Secrets: map[string]string{"api_key": "env:KEY", "token": "file:" + token}},
		"absent": {Secrets: map[string]string{"a": "env:NOPE", "b": "file:" + filepath.Join(dir, "none")}},
		"huge":   {Secrets: map[string]string{"a": "env:HUGE", "b": "file:" + big}},
	}}
	manifest := func(name string) *plugin.Manifest {
		return &plugin.Manifest{Name: name, Permissions: plugin.Permissions{Config: map[string]string{"region": "eu", "api_key": "manifest", "keep": "1"}}}
	}
	got, err := s.Config(manifest("w"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"region": "us", "api_key": "env-value", "keep": "1", "units": "metric", "token": "tok-123"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged config (-want +got):\n%s", diff)
	}
	if m := manifest("w"); m.Permissions.Config["api_key"] != "manifest" {
		t.Error("the manifest's map was modified")
	}
	if got, err := s.Config(manifest("other")); err != nil || got["api_key"] != "manifest" {
		t.Errorf("a plugin without settings got %v, %v", got, err)
	}
	for name, wants := range map[string][]string{
		"absent": {"plugins.absent.secrets.a: environment variable NOPE is not set", "plugins.absent.secrets.b: secret file: open " + filepath.Join(dir, "none")},
		"huge":   {"plugins.huge.secrets.a: environment variable HUGE is over 65536 bytes", "plugins.huge.secrets.b: secret file " + big + " is over 65536 bytes"},
	} {
		_, err := s.Config(manifest(name))
		for _, w := range wants {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Config(%s) = %v, want %q", name, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "yyyy") {
			t.Errorf("Config(%s) error carries the value", name)
		}
	}
	keys, secrets := s.View("w")
	if diff := cmp.Diff([]string{"region", "units"}, keys); diff != "" {
		t.Errorf("View keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"api_key": SecretSet, "token": SecretSet}, secrets); diff != "" {
		t.Errorf("View secrets (-want +got):\n%s", diff)
	}
	if _, secrets := s.View("absent"); secrets["a"] != SecretUnset || secrets["b"] != SecretUnset {
		t.Errorf("View(absent) = %v", secrets)
	}
}
