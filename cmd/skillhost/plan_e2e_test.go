package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// planPlugins writes a plugin folder with the plan package's WAT fixtures:
// hostile (echo, loop, trap, fail) and burn (spins, then echoes).
func planPlugins(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, manifest := range map[string]string{
		"hostile": "name: hostile\nversion: 1.0.0\ndescription: fixture\nwasm: plugin.wasm\nskills:\n  - {id: echo, description: echoes}\n",
		"burn":    "name: burn\nversion: 1.0.0\ndescription: fixture\nwasm: plugin.wasm\nlimits: {timeout: 30s}\nskills:\n  - {id: burn, description: spins then echoes}\n",
	} {
		wasm, err := os.ReadFile(filepath.Join("..", "..", "host", "internal", "plan", "testdata", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.wasm"), wasm, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// planStatus is the part of plan/status the test reads.
type planStatus struct {
	Status   string `json:"status"`
	Progress struct {
		TotalSteps     int      `json:"total_steps"`
		CompletedSteps int      `json:"completed_steps"`
		CurrentStep    *string  `json:"current_step"`
		RunningSteps   []string `json:"running_steps"`
	} `json:"progress"`
	Result   map[string]any `json:"result"`
	Attempts map[string]int `json:"attempts"`
	Error    map[string]any `json:"error"`
	Webhook  map[string]any `json:"webhook"`
}

func waitPlan(t *testing.T, url, session, planID, what string, cond func(planStatus) bool) planStatus {
	t.Helper()
	var st planStatus
	if !pollEvery(90*time.Second, 50*time.Millisecond, func() bool {
		st = planStatus{}
		mustResult(t, call(t, url, "_cleveragents/plan/status", map[string]any{"session_id": session, "plan_id": planID}), &st)
		return cond(st)
	}) {
		t.Fatalf("gave up waiting for %s: %+v", what, st)
	}
	return st
}

// TestKill9MidPlanResumes: a plan whose host is killed with SIGKILL while
// its second step runs completes after a restart on the same data folder,
// without running its first step again.
func TestKill9MidPlanResumes(t *testing.T) {
	t.Parallel()
	data, plugins := t.TempDir(), planPlugins(t)
	h := startHost(t, data, plugins)
	var sess struct {
		SessionID string `json:"session_id"`
	}
	mustResult(t, call(t, h.url, "_cleveragents/session/create", map[string]any{}), &sess)

	// Calibrate the slow step to about 3 s on this machine.
	const probe = 20_000_000
	var probed struct {
		ExecutionTimeMS int64 `json:"execution_time_ms"`
	}
	mustResult(t, call(t, h.url, "_cleveragents/skill/execute", map[string]any{
		"session_id": sess.SessionID, "skill_id": "burn", "skill_params": map[string]any{"n": probe},
	}), &probed)
	n := int64(probe) * 3000 / max(probed.ExecutionTimeMS, 1)

	var created map[string]any
	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{
		"session_id": sess.SessionID, "plan_id": "survivor",
		"plan_definition": map[string]any{"name": "survive a crash", "steps": []map[string]any{
			{"id": "first", "type": "skill", "action": "echo", "params": map[string]any{"i": 1}},
			{"id": "slow", "type": "skill", "action": "burn", "params": map[string]any{"n": n}},
			{"id": "last", "type": "skill", "action": "echo", "params": map[string]any{"i": 3}},
		}},
	}), &created)
	var started map[string]any
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess.SessionID, "plan_id": "survivor"}), &started)
	waitPlan(t, h.url, sess.SessionID, "survivor", "step 2 to run", func(st planStatus) bool {
		return st.Progress.CompletedSteps == 1 && st.Attempts["slow"] == 1
	})
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.done

	h2 := startHost(t, data, plugins)
	st := waitPlan(t, h2.url, sess.SessionID, "survivor", "completion", func(st planStatus) bool { return st.Status != "executing" })
	if st.Status != "completed" {
		t.Fatalf("plan %s after restart, error %v", st.Status, st.Error)
	}
	if diff := cmp.Diff(map[string]int{"first": 1, "slow": 2, "last": 1}, st.Attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"i": float64(3)}, st.Result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if st.Progress.CompletedSteps != 3 || st.Progress.CurrentStep != nil {
		t.Errorf("progress %+v", st.Progress)
	}
}
