package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// bigManifest is a plugin whose one instance holds about 130 MiB of the
// sandbox memory budget (two 64 MiB linear memories and its base).
func bigManifest(name string) string {
	return `name: ` + name + `
version: 1.0.0
description: A plugin with a large memory limit
wasm: hostile.wasm
limits: {timeout: 5s, memory: 64MiB, concurrency: 1}
skills:
  - {id: ` + name + `-echo, function: echo, description: echoes}
`
}

// warmBigManifest is bigManifest keeping its one instance warm.
func warmBigManifest(name string) string {
	return strings.Replace(bigManifest(name), "concurrency: 1}", "concurrency: 1, min_instances: 1}", 1)
}

// mustWarm waits until plugin has a live instance (its min_instances).
func mustWarm(t *testing.T, th *testHost, plugin string) {
	t.Helper()
	live := func() bool {
		var pool struct {
			Plugins []struct {
				Plugin    string
				Instances struct{ Live int }
			}
		}
		mustGetJSON(t, th, "", "/admin/pool", &pool)
		for _, p := range pool.Plugins {
			if p.Plugin == plugin {
				return p.Instances.Live > 0
			}
		}
		return false
	}
	if !waitFor(30*time.Second, live) {
		t.Fatalf("%s never kept its instance warm", plugin)
	}
}

// A host whose memory budget holds one big plugin's warm instance
// (min_instances) but not a second one's: the second is listed not_ready
// (not loaded) with why, a folder that fails to load is failed, and the
// host is degraded in /admin/status — while GET /health, the liveness
// probe, stays healthy.
func TestHealthDegraded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "big-a", warmBigManifest("big-a"))
	mustPlugin(t, dir, "big-b", bigManifest("big-b"))
	if err := os.MkdirAll(filepath.Join(dir, "broken"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken", "plugin.yaml"), []byte("name: broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		c.Sandbox.MaxLiveBytes = 400 * config.MiB // one ~130 MiB instance plus a call's ~191 MiB of stack: not two
		c.Policy.QueueWait = 1                    // 1ns: a call without room is refused at once
		c.Policy.MaxMinInstances = 1
	})
	mustWarm(t, th, "big-a")
	sid := th.mustSession(t)
	wantError(t, th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "big-b-echo"}), -32106, "pool_saturated")
	if r := th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "big-a-echo"}); r.Error != nil {
		t.Fatalf("big-a, which has its instance: %+v", r.Error)
	}

	var status struct {
		Health      string         `json:"health"`
		HealthError string         `json:"health_error"`
		Plugins     map[string]int `json:"plugins"`
		Problems    []struct {
			Plugin, State, Message string
		} `json:"problems"`
	}
	mustGetJSON(t, th, "", "/admin/status", &status)
	if status.Health != "degraded" || !strings.Contains(status.HealthError, "big-b (not ready)") || !strings.Contains(status.HealthError, "broken (failed)") {
		t.Errorf("health = %q (%q), want degraded naming big-b and broken", status.Health, status.HealthError)
	}
	states := map[string]string{}
	for _, p := range status.Problems {
		states[p.Plugin] = p.State
		if p.Message == "" {
			t.Errorf("problem of %s says nothing", p.Plugin)
		}
	}
	if diff := cmp.Diff(map[string]string{"big-b": "not_ready", "broken": "failed"}, states); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"loaded": 1, "not_ready": 1, "reloading": 0, "loading": 0, "failed": 1}, status.Plugins); diff != "" {
		t.Errorf("plugins by state (-want +got):\n%s", diff)
	}
	var plugins struct {
		Plugins []struct{ Name, State, Error string }
	}
	mustGetJSON(t, th, "", "/admin/plugins", &plugins)
	for _, p := range plugins.Plugins {
		if p.Name == "big-b" && (p.State != "not_ready" || !strings.Contains(p.Error, "pool_saturated")) {
			t.Errorf("big-b in /admin/plugins: %s %q, want not_ready naming the refused calls", p.State, p.Error)
		}
	}

	resp, body := th.get(t, "/health")
	var health map[string]any
	if err := json.Unmarshal(body, &health); err != nil || resp.StatusCode != 200 || health["status"] != "healthy" {
		t.Errorf("GET /health = %d %s, want 200 healthy (liveness does not follow plugin problems)", resp.StatusCode, body)
	}
}

// A host whose plugins all serve is healthy, with no problems.
func TestHealthHealthy(t *testing.T) {
	t.Parallel()
	th := mustHost(t, toolsDir(t))
	var status struct {
		Health   string `json:"health"`
		Problems []any  `json:"problems"`
	}
	mustGetJSON(t, th, "", "/admin/status", &status)
	if status.Health != "healthy" || status.Problems == nil || len(status.Problems) != 0 {
		t.Errorf("status = %+v, want healthy with problems []", status)
	}
}
