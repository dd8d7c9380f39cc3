package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mustHostilePlugins writes a plugin folder with the sandbox's hostile
// fixture (an echo and a trap) and a broken folder.
func mustHostilePlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	wasm, err := os.ReadFile("../../host/internal/sandbox/testdata/hostile.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string]map[string]string{
		"hostile": {"hostile.wasm": string(wasm), "plugin.yaml": "name: hostile\nversion: 1.2.0\ndescription: d\nwasm: hostile.wasm\n" +
			"limits: {timeout: 5s, memory: 8MiB}\nskills:\n  - {id: echo, function: echo, description: d}\n  - {id: trap, function: trap, description: d}\n"},
		"broken": {"plugin.yaml": "name: broken\n"},
	} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		for file, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name, file), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// `plugins` and `status` print the admin documents as tables (or as JSON
// with --json).
func TestPluginsAndStatusCommands(t *testing.T) {
	t.Parallel()
	plugins := mustHostilePlugins(t)
	key := filepath.Join(t.TempDir(), "publisher.pem")
	for _, args := range [][]string{{"keygen", "--out", key}, {"plugin", "sign", filepath.Join(plugins, "hostile"), "--key", key}} {
		if _, errOut, code := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
	}
	h := startHost(t, t.TempDir(), plugins)
	runCLI(t, "call", "--url", h.url, "_cleveragents/session/create", `{"session_id":"ops"}`)
	for _, skill := range []string{"echo", "trap", "trap"} {
		runCLI(t, "call", "--url", h.url, "_cleveragents/skill/execute", `{"session_id":"ops","skill_id":"`+skill+`","skill_params":{}}`)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"plugins", []string{"plugins", "--url", h.url}, []string{
			"NAME", "SIGNER", "hostile  1.2.0    loaded", "echo,trap", "5s", "8MiB", "sha256:", " (untrusted)\n",
			"broken (", "not loaded", "version: is required",
		}},
		{"status", []string{"status", "--url", h.url, "--window", "0"}, []string{
			"degraded (1 plugin(s) need attention: broken (failed))", "plugins   1 loaded, 0 reloading, 0 loading, 1 failed",
			"hostile/echo  1", "hostile/trap  2", "trap 2",
			"recent failures (2 shown, 2 since start)", "_cleveragents/skill/execute  hostile/trap  -32103  trap",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, errOut, code := runCLI(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	out, _, code := runCLI(t, "plugins", "--url", h.url+"/rpc", "--json")
	var doc struct {
		Plugins []struct{ Name, State string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Plugins) != 2 {
		t.Errorf("plugins --json: exit %d\n%s", code, out)
	}
}

// Refusals and replies that are not admin documents are one line, exit 1.
func TestAdminCommandErrors(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "skillhost.yaml")
	yaml := "auth:\n  keys:\n    - {id: ops, sha256: " + strings.Repeat("ab", 32) + ", scopes: [\"*\"]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, t.TempDir(), t.TempDir(), "--config", cfg)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no key", []string{"status", "--url", h.url}, 1, "-32105"},
		{"wrong key", []string{"plugins", "--url", h.url, "--api-key", "nope"}, 1, "invalid_credentials"},
		{"not a host", []string{"plugins", "--url", h.url + "/health/"}, 1, "HTTP 404 Not Found"},
		{"bad url", []string{"status", "--url", "ftp://x"}, 2, "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, errOut, code := runCLI(t, tt.args...)
			line := strings.TrimSpace(errOut)
			if code != tt.code || strings.Contains(line, "\n") || !strings.Contains(line, tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d with one line containing %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}
