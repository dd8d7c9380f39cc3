package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// The mapping form of `plugins` carries the plugin folder (dir) and each
// plugin's settings, read as written (a dotted key stays one key, scalars
// become strings); sources.oci items decode with their defaults.
func TestLoadPluginSettingsAndSources(t *testing.T) {
	t.Parallel()
	file := writeFile(t, `plugins:
  dir: my-plugins
  weather:
    config: {units: metric, api.base: "https://api.example", retries: 3, verbose: true}
    secrets: {api_key: "env:WEATHER_KEY", token: "file:/run/secrets/token"}
  empty: {}
sources:
  oci:
    - ref: ghcr.io/acme/weather:1.2
      poll: 5m
    - {ref: "oci://127.0.0.1:5000/team/text@sha256:`+strings.Repeat("ab", 32)+`", plain_http: true}
`)
	got, err := config.Load(config.Sources{File: file, Environ: []string{}})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := config.Defaults()
	want.Plugins = "my-plugins"
	want.PluginSettings = map[string]config.PluginSettings{
		"weather": {
			Config:  map[string]string{"units": "metric", "api.base": "https://api.example", "retries": "3", "verbose": "true"},
			Secrets: map[string]string{"api_key": "env:WEATHER_KEY", "token": "file:/run/secrets/token"},
		},
		"empty": {},
	}
	want.Sources.OCI = []config.OCISource{
		{Ref: "ghcr.io/acme/weather:1.2", Poll: 5 * time.Minute},
		{Ref: "oci://127.0.0.1:5000/team/text@sha256:" + strings.Repeat("ab", 32), PlainHTTP: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load (-want +got):\n%s", diff)
	}
}

// The string form of `plugins` is the folder, as before; the mapping form
// without dir keeps the default folder.
func TestLoadPluginsFolderForms(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ file, want string }{
		{"plugins: here\n", "here"},
		{"plugins:\n  weather: {config: {a: b}}\n", "plugins"},
	} {
		got, err := config.Load(config.Sources{File: writeFile(t, tt.file), Environ: []string{"SKILLHOST_DATA=d"}})
		if err != nil {
			t.Fatalf("Load(%q): %v", tt.file, err)
		}
		if got.Plugins != tt.want {
			t.Errorf("Load(%q).Plugins = %q, want %q", tt.file, got.Plugins, tt.want)
		}
	}
}

func TestLoadRejectsPluginSettingsAndSources(t *testing.T) {
	t.Parallel()
	const literal = "sk-live-0123456789"
	digest := "@sha256:" + strings.Repeat("ab", 32)
	tests := []struct{ name, file, want string }{
		{"literal secret", "plugins:\n  w:\n    secrets: {api_key: " + literal + "}\n",
			"config plugins.w.secrets.api_key: must be env:NAME or file:PATH"},
		{"literal secret with a colon", "plugins:\n  w:\n    secrets: {api_key: \"sk:" + literal + "\"}\n",
			"config plugins.w.secrets.api_key: must be env:NAME or file:PATH"},
		{"bad env name", "plugins:\n  w:\n    secrets: {k: \"env:" + literal + "-x\"}\n", "plugins.w.secrets.k: env: must name an environment variable"},
		{"empty file", "plugins:\n  w:\n    secrets: {k: \"file:\"}\n", "plugins.w.secrets.k: file: must name a file"},
		{"unknown section key", "plugins:\n  w:\n    secret: {k: \"env:K\"}\n", "plugins.w: unknown key secret (a plugin's section has config and secrets; did you mean secrets?)"},
		{"nested value", "plugins:\n  w:\n    config: {k: {a: " + literal + "}}\n", "plugins.w.config.k: must be a single value"},
		{"config and secret", "plugins:\n  w:\n    config: {k: v}\n    secrets: {k: \"env:K\"}\n", "plugins.w.config.k: is also a secret"},
		{"bad plugin name", "plugins:\n  Weather: {}\n", `config plugins.Weather: "Weather" is not a plugin name`},
		{"dir is not a folder", "plugins:\n  dir: {config: {a: b}}\n", `plugins.dir: must be the plugin folder (a string); a plugin named "dir" cannot have settings`},
		{"section not a mapping", "plugins:\n  w: [a]\n", "plugins.w: must be a mapping with config and secrets"},
		{"oci without ref", "sources:\n  oci:\n    - {poll: 1m}\n", "config sources.oci[0].ref: is required"},
		{"oci without registry", "sources:\n  oci:\n    - {ref: acme/weather:1}\n", `sources.oci[0].ref: "acme/weather:1" names no registry host`},
		{"oci without tag", "sources:\n  oci:\n    - {ref: ghcr.io/acme/weather}\n", "sources.oci[0].ref: \"ghcr.io/acme/weather\" has no tag or digest"},
		{"oci bad ref", "sources:\n  oci:\n    - {ref: \"ghcr.io/Acme/weather:1\"}\n", "sources.oci[0].ref: \"ghcr.io/Acme/weather:1\" is not registry/repository:tag"},
		{"oci twice", "sources:\n  oci:\n    - {ref: ghcr.io/a/w:1}\n    - {ref: \"oci://ghcr.io/a/w:1\"}\n", "sources.oci[1].ref: \"oci://ghcr.io/a/w:1\" is already sources.oci[0]"},
		{"oci poll too fast", "sources:\n  oci:\n    - {ref: ghcr.io/a/w:1, poll: 10ms}\n", "sources.oci[0].poll: 10ms is under the 1s minimum"},
		{"oci poll a digest", "sources:\n  oci:\n    - {ref: \"ghcr.io/a/w" + digest + "\", poll: 1m}\n", "sources.oci[0].poll: \"ghcr.io/a/w" + digest + "\" is pinned by digest"},
		{"oci poll without unit", "sources:\n  oci:\n    - {ref: ghcr.io/a/w:1, poll: 60}\n", "sources.oci[0]: poll: 60 has no unit"},
		{"oci unknown key", "sources:\n  oci:\n    - {ref: ghcr.io/a/w:1, plainhttp: true}\n", "sources.oci[0]: unknown key(s) plainhttp (did you mean plain_http?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(config.Sources{File: writeFile(t, tt.file), Environ: []string{}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), literal) {
				t.Errorf("Load error repeats a value written as a secret: %v", err)
			}
		})
	}
}
