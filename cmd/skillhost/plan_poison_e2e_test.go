package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// startLimited runs `skillhost serve` like startHost, with its address
// space capped at limitKiB (ulimit -v): a host that tries to allocate GiB
// dies of "fatal error: out of memory" instead of taking the machine with
// it. env is added to the environment.
func startLimited(t *testing.T, data, plugins string, limitKiB int, env ...string) *hostProc {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, limitKiB),
		binPath, "serve", "--listen", "127.0.0.1:0", "--data", data, "--plugins", plugins)
	cmd.Env = append(os.Environ(), env...)
	return startServe(t, cmd)
}

// peakRSS is the process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmHWM in /proc/%d/status", pid)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// alive fails unless the host process still runs.
func alive(t *testing.T, h *hostProc, when string) {
	t.Helper()
	select {
	case err := <-h.done:
		h.done <- err
		t.Fatalf("the host died %s: %v\n%s", when, err, tail(h.stderr.String(), 2000))
	default:
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestAmplifyingPlanLeavesTheHostUp is finding 1 of issue 20 against the
// real binary: ~12,000 exact references to a 200 KiB value in one step's
// params. Referencing plan.input, plan/execute refuses it; referencing an
// earlier step's output, that step fails with params_too_large when it
// runs. The host stays up with its peak RSS bounded and serves the next
// plan. Unfixed, the host dies resolving the references (under the
// address-space cap: fatal error: out of memory).
func TestAmplifyingPlanLeavesTheHostUp(t *testing.T) {
	t.Parallel()
	const maxRSS = 256 << 20
	h := startLimited(t, t.TempDir(), planPlugins(t), 3<<20)
	sess := mustSessionID(t, h.url)
	input := strings.Repeat("x", 200<<10)
	refs := func(ref string) string { return strings.TrimSuffix(strings.Repeat(`"`+ref+`",`, 12_000), ",") }

	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "in",
		"plan_definition": json.RawMessage(`{"name":"amplifier","steps":[{"id":"a","type":"skill","action":"echo","params":{"a":[` +
			refs("${plan.input}") + `]}}]}`)}), &map[string]any{})
	r := call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "in", "input": input})
	if r.Error == nil || r.Error.Code != -32106 || r.Error.Data["reason"] != "params_too_large" || r.Error.Data["field"] != "input" {
		t.Errorf("plan/execute: %+v, want -32106 params_too_large on field input", r.Error)
	}

	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "out",
		"plan_definition": json.RawMessage(`{"name":"amplifier","steps":[` +
			`{"id":"a","type":"skill","action":"echo","params":{"x":"${plan.input}"}},` +
			`{"id":"b","type":"skill","action":"echo","params":{"a":[` + refs("${steps.a.output}") + `]}}]}`)}), &map[string]any{})
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "out", "input": input}), &map[string]any{})
	st := waitPlan(t, h.url, sess, "out", "the step to fail", func(st planStatus) bool { alive(t, h, "running the plan"); return st.Status != "executing" })
	if st.Status != "failed" || st.Error["code"] != float64(-32106) || st.Error["details"].(map[string]any)["reason"] != "params_too_large" {
		t.Errorf("plan %s, error %v; want failed with -32106 params_too_large", st.Status, st.Error)
	}
	alive(t, h, "after the plan")
	rss := peakRSS(t, h.cmd.Process.Pid)
	t.Logf("peak RSS %d MiB", rss>>20)
	if rss > maxRSS {
		t.Errorf("peak RSS %d MiB, want < %d MiB", rss>>20, maxRSS>>20)
	}

	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "next",
		"plan_definition": map[string]any{"name": "next", "steps": []map[string]any{{"id": "s", "type": "skill", "action": "echo", "params": map[string]any{"ok": true}}}}}), &map[string]any{})
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "next"}), &map[string]any{})
	if st := waitPlan(t, h.url, sess, "next", "completion", func(st planStatus) bool { return st.Status != "executing" }); st.Status != "completed" {
		t.Errorf("the next plan is %s, error %v", st.Status, st.Error)
	}
}

var bootLine = regexp.MustCompile(`msg="plan: running steps".* boot=(boot_[0-9a-f]+)`)

// bootOf is the boot id a host logged at start.
func bootOf(t *testing.T, h *hostProc) string {
	t.Helper()
	m := bootLine.FindStringSubmatch(h.stderr.String())
	if m == nil {
		t.Fatalf("the host logged no boot id:\n%s", tail(h.stderr.String(), 2000))
	}
	return m[1]
}

// TestKill9TwiceQuarantinesTheStep: the host is killed with SIGKILL while
// the same plan step runs, twice. The third host does not run the step
// again: the plan fails with -32106 quarantined naming both dead boots, the
// host logs a warning naming plan, step and boots, and it serves the next
// plan.
func TestKill9TwiceQuarantinesTheStep(t *testing.T) {
	t.Parallel()
	data, plugins := t.TempDir(), planPlugins(t)
	fast := "SKILLHOST_PLANS__ACK_WAIT=1s" // a killed host's job comes back within a second
	h := startLimited(t, data, plugins, 3<<20, fast)
	sess := mustSessionID(t, h.url)

	// Calibrate the slow step to about 20 s, so it never finishes first.
	const probe = 20_000_000
	var probed struct {
		ExecutionTimeMS int64 `json:"execution_time_ms"`
	}
	mustResult(t, call(t, h.url, "_cleveragents/skill/execute", map[string]any{
		"session_id": sess, "skill_id": "burn", "skill_params": map[string]any{"n": probe},
	}), &probed)
	n := int64(probe) * 20_000 / max(probed.ExecutionTimeMS, 1)
	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "poison",
		"plan_definition": map[string]any{"name": "kills its host", "steps": []map[string]any{
			{"id": "first", "type": "skill", "action": "echo", "params": map[string]any{"i": 1}},
			{"id": "slow", "type": "skill", "action": "burn", "params": map[string]any{"n": n}},
		}}}), &map[string]any{})
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "poison"}), &map[string]any{})

	var boots []any
	for start := 1; start <= 2; start++ {
		waitPlan(t, h.url, sess, "poison", fmt.Sprintf("start %d of the slow step", start), func(st planStatus) bool {
			return st.Attempts["slow"] == start && cmp.Equal(st.Progress.RunningSteps, []string{"slow"})
		})
		boots = append(boots, bootOf(t, h))
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-h.done
		h = startLimited(t, data, plugins, 3<<20, fast)
	}
	st := waitPlan(t, h.url, sess, "poison", "quarantine", func(st planStatus) bool { return st.Status != "executing" })
	details, _ := st.Error["details"].(map[string]any)
	if st.Status != "failed" || st.Error["code"] != float64(-32106) || details["reason"] != "quarantined" {
		t.Fatalf("plan %s, error %v; want failed with -32106 quarantined", st.Status, st.Error)
	}
	if diff := cmp.Diff(boots, details["crashed_boots"]); diff != "" {
		t.Errorf("crashed_boots (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"first": 1, "slow": 2}, st.Attempts); diff != "" {
		t.Errorf("attempts (-want +got): the step ran a third time\n%s", diff)
	}
	warned := false
	for l := range strings.Lines(h.stderr.String()) {
		warned = warned || strings.Contains(l, "level=WARN") && strings.Contains(l, "quarantined") &&
			strings.Contains(l, "plan_id=poison") && strings.Contains(l, "step_id=slow") &&
			strings.Contains(l, fmt.Sprintf("boots=%s,%s", boots...))
	}
	if !warned {
		t.Errorf("no warning naming the plan, step and boots:\n%s", tail(h.stderr.String(), 3000))
	}

	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "next",
		"plan_definition": map[string]any{"name": "next", "steps": []map[string]any{{"id": "s", "type": "skill", "action": "echo", "params": map[string]any{"ok": true}}}}}), &map[string]any{})
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "next"}), &map[string]any{})
	if st := waitPlan(t, h.url, sess, "next", "completion", func(st planStatus) bool { return st.Status != "executing" }); st.Status != "completed" {
		t.Errorf("the next plan is %s, error %v", st.Status, st.Error)
	}
}
