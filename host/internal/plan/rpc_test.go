package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// wire is a JSON-RPC engine serving the plan methods of e.
func wire(t *testing.T, e *env) func(body string) map[string]any {
	t.Helper()
	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20})
	e.m.Register(eng, nil)
	return func(body string) map[string]any {
		t.Helper()
		reply := eng.Handle(localCtx(), []byte(body))
		var out map[string]any
		if err := json.Unmarshal(reply.Body, &out); err != nil {
			t.Fatalf("reply %q: %v", reply.Body, err)
		}
		return out
	}
}

// TestSpecExample replays spec 001's "Creating and Executing a Plan"
// example. The host has no build_application skill, so the plan fails on
// step_1 with the registry's unknown_skill error.
func TestSpecExample(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	if _, err := e.st.CreateSession(localCtx(), store.Session{ID: "sess_abc123", AgentID: "agent_main"}); err != nil {
		t.Fatal(err)
	}
	call := wire(t, e)
	created := call(`{"jsonrpc":"2.0","method":"_cleveragents/plan/create","params":{"session_id":"sess_abc123","plan_id":"plan_xyz789",
		"plan_definition":{"name":"Deploy Application","steps":[
		{"id":"step_1","type":"skill","action":"build_application","params":{"version":"1.0"}},
		{"id":"step_2","type":"skill","action":"deploy_application","params":{"environment":"production"}}]}},"id":"req_2"}`)
	want := map[string]any{"jsonrpc": "2.0", "id": "req_2", "result": map[string]any{
		"plan_id": "plan_xyz789", "session_id": "sess_abc123", "status": "created", "name": "Deploy Application", "total_steps": float64(2),
	}}
	if diff := cmp.Diff(want, created, cmpopts.IgnoreMapEntries(func(k string, _ any) bool { return k == "created_at" })); diff != "" {
		t.Errorf("plan/create (-want +got):\n%s", diff)
	}
	if _, err := time.Parse(time.RFC3339, created["result"].(map[string]any)["created_at"].(string)); err != nil {
		t.Errorf("created_at: %v", err)
	}
	started := call(`{"jsonrpc":"2.0","method":"_cleveragents/plan/execute","params":{"session_id":"sess_abc123","plan_id":"plan_xyz789",
		"execution_options":{"parallel":false,"timeout":3600000}},"id":"req_3"}`)
	res, _ := started["result"].(map[string]any)
	if res["status"] != "executing" || !strings.HasPrefix(fmt.Sprint(res["execution_id"]), "exec_") || res["started_at"] == nil {
		t.Fatalf("plan/execute: %v", started)
	}
	var status map[string]any
	testutil.Eventually(t, 30*time.Second, "the plan to finish", func() bool {
		status = call(`{"jsonrpc":"2.0","method":"_cleveragents/plan/status","params":{"session_id":"sess_abc123","plan_id":"plan_xyz789"},"id":"req_4"}`)
		r, _ := status["result"].(map[string]any)
		return r["status"] != "executing"
	})
	r := status["result"].(map[string]any)
	got := map[string]any{"status": r["status"], "progress": r["progress"], "result": r["result"], "step_results": r["step_results"],
		"code": r["error"].(map[string]any)["code"], "details": r["error"].(map[string]any)["details"]}
	wantStatus := map[string]any{
		"status":       "failed",
		"progress":     map[string]any{"total_steps": float64(2), "completed_steps": float64(0), "current_step": nil, "running_steps": []any{}},
		"result":       nil,
		"step_results": map[string]any{},
		"code":         float64(-32602),
		"details": map[string]any{"step_id": "step_1", "step_index": float64(0), "reason": "unknown_skill",
			"action": "build_application", "attempt": float64(1)},
	}
	if diff := cmp.Diff(wantStatus, got); diff != "" {
		t.Errorf("plan/status (-want +got):\n%s", diff)
	}
}

func TestWireErrors(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", Config{})
	owner, other := mustSession(t, e), mustSession(t, e)
	mustCreate(t, e, owner, "p", definition(step("s", "echo", "")))
	call := wire(t, e)
	tests := []struct {
		name   string
		body   string
		code   float64
		reason string
	}{
		{"other session", `{"method":"_cleveragents/plan/status","params":{"session_id":"` + other + `","plan_id":"p"}}`, -32101, fault.ReasonPlanNotFound},
		{"unknown session", `{"method":"_cleveragents/plan/status","params":{"session_id":"sess_none","plan_id":"p"}}`, -32100, "session_not_found"},
		{"no session", `{"method":"_cleveragents/plan/create","params":{"plan_definition":{}}}`, -32602, "invalid_params"},
		{"no plan id", `{"method":"_cleveragents/plan/execute","params":{"session_id":"` + owner + `"}}`, -32602, "invalid_params"},
		{"array params", `{"method":"_cleveragents/plan/status","params":["x"]}`, -32602, "invalid_params"},
		{"unknown param", `{"method":"_cleveragents/plan/status","params":{"session_id":"` + owner + `","plan_id":"p","bogus":1}}`, -32602, "invalid_params"},
		{"negative timeout", `{"method":"_cleveragents/plan/execute","params":{"session_id":"` + owner + `","plan_id":"p","execution_options":{"timeout":-5}}}`, -32602, "invalid_params"},
		{"huge timeout", `{"method":"_cleveragents/plan/execute","params":{"session_id":"` + owner + `","plan_id":"p","execution_options":{"timeout":1e300}}}`, -32602, "invalid_params"},
		{"duplicate", `{"method":"_cleveragents/plan/create","params":{"session_id":"` + owner + `","plan_id":"p","plan_definition":{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"}]}}}`, -32107, fault.ReasonPlanExists},
		{"cancel created", `{"method":"_cleveragents/plan/cancel","params":{"session_id":"` + owner + `","plan_id":"p"}}`, -32107, fault.ReasonPlanNotExecuting},
		{"metadata not an object", `{"method":"_cleveragents/plan/create","params":{"session_id":"` + owner + `","metadata":[1],"plan_definition":{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"}]}}}`, -32602, "invalid_params"},
		{"plan id with control characters", `{"method":"_cleveragents/plan/create","params":{"session_id":"` + owner + `","plan_id":"a\u0000b","plan_definition":{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"}]}}}`, -32602, "invalid_params"},
		{"plan id too long", `{"method":"_cleveragents/plan/create","params":{"session_id":"` + owner + `","plan_id":"` + strings.Repeat("p", MaxPlanIDBytes+1) + `","plan_definition":{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"}]}}}`, -32602, "invalid_params"},
		{"metadata too large", `{"method":"_cleveragents/plan/create","params":{"session_id":"` + owner + `","metadata":{"x":"` + strings.Repeat("m", maxMetadataBytes) + `"},"plan_definition":{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"}]}}}`, -32602, "invalid_params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := call(`{"jsonrpc":"2.0","id":7,` + tt.body[1:])
			errObj, _ := out["error"].(map[string]any)
			data, _ := errObj["data"].(map[string]any)
			if errObj == nil || errObj["code"] != tt.code || data["reason"] != tt.reason {
				t.Errorf("got %v, want code %v reason %s", out, tt.code, tt.reason)
			}
		})
	}
}

// TestCheckpointCap: a step whose output would push the plan record past
// MaxRecordBytes fails the plan with Resource exhausted, not the host.
func TestCheckpointCap(t *testing.T) {
	t.Parallel()
	e := mustEnv(t, "", plans(func(c *Config) { c.MaxDefinition = 8 << 10; c.MaxRecord = 64 << 10 }))
	sess := mustSession(t, e)
	mustCreate(t, e, sess, "big", definition(step("one", "echo", `{"a":1}`), step("huge", "huge_output", "")))
	mustExecute(t, e, sess, "big", ExecuteOptions{})
	st := waitFor(t, e, sess, "big", "failure", finished)
	if st.Status != StatusFailed || st.Error == nil || st.Error.Code != -32106 || st.Error.Details["reason"] != "output_limit" ||
		!strings.Contains(st.Error.Message, "plan record") {
		t.Fatalf("status %s error %+v", st.Status, st.Error)
	}
	if diff := cmp.Diff(map[string]json.RawMessage{"one": json.RawMessage(`{"a":1}`)}, st.StepResults); diff != "" {
		t.Errorf("step results (-want +got):\n%s", diff)
	}
}
