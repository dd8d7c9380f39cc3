package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillhost/skillhost/host/config"
)

// FuzzLoad feeds arbitrary YAML files and SKILLHOST_* variables to Load:
// it must never panic, and a configuration it accepts must validate.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"skillhost.yaml", "dev.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", "config", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "SKILLHOST_LISTEN=127.0.0.1:9000")
	}
	f.Add([]byte("policy:\n  max_memory: 1GiB\n  allowed_host_patterns: ['*.example.com:8443']\n"), "SKILLHOST_POLICY__QUEUE_WAIT=1s")
	f.Add([]byte("a: &a [*a, *a]\nb: &b [*a, *a, *a]\n"), "SKILLHOST_NET__ALLOW_PRIVATE=10.0.0.0/8,::1")
	f.Add([]byte("sandbox: {max_live_bytes: 1GiB}\nstore: {max_value: -1}\n"), "SKILLHOST_SANDBOX__MAX_LIVE_BYTES=12")
	f.Add([]byte("\x00\xff: [\n"), "SKILLHOST_=x")
	f.Fuzz(func(t *testing.T, yaml []byte, env string) {
		file := filepath.Join(t.TempDir(), "skillhost.yaml")
		if err := os.WriteFile(file, yaml, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(config.Sources{File: file, Environ: []string{env}})
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("Load accepted a configuration that does not validate: %v", err)
		}
	})
}
