package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/host/config"
)

// ratedManifest is a plugin whose skills (all on the echo export) are
// each called through one way in by TestSkillRatesEveryEntryPoint.
const ratedManifest = `name: rated
version: 1.0.0
description: Skills under policy.skill_rates
wasm: hostile.wasm
limits: {timeout: 10s, memory: 16MiB, output: 64KiB, concurrency: 4}
skills:
  - {id: rl-exec, function: echo, description: called with skill/execute}
  - {id: rl-agent, function: echo, description: called with agent/call}
  - {id: rl-a2a, function: echo, description: called with SendMessage}
  - {id: rl-stream, function: echo, description: called with SendStreamingMessage}
  - {id: rl-mcp, function: echo, description: called as an MCP tool}
  - {id: rl-plan, function: echo, description: called by plan steps}
  - {id: rl-nested, function: echo, description: called by a plugin through agent_call}
  - {id: free, function: echo, description: no rule matches it}
`

// wantRateLimited checks a refusal over /rpc: HTTP 429 with Retry-After,
// -32106 rate_limited naming the skill, the rule and its config key.
func wantRateLimited(t *testing.T, r httpReply, skill, rule, limit string) {
	t.Helper()
	wantRefused(t, r, http.StatusTooManyRequests, -32106, "rate_limited")
	if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
		t.Errorf("Retry-After = %q, want the seconds until the next token", r.Header.Get("Retry-After"))
	}
	data := map[string]any{}
	if r.RPC.Error != nil {
		data = r.RPC.Error.Data
	}
	for k, v := range map[string]string{"skill_id": skill, "rule": rule, "limit": limit} {
		if got, _ := data[k].(string); got != v && !strings.Contains(string(r.Body), fmt.Sprintf("%q:%q", k, v)) {
			t.Errorf("error data %s = %q, want %q: %s", k, got, v, r.Body)
		}
	}
}

// A per-key rule: key A past the rate is refused (429, rate_limited) while
// key B is still served; the refusals are counted per skill on /metrics
// and the rule is listed with the skill in /admin/plugins.
func TestSkillRatesPerKey(t *testing.T) {
	t.Parallel()
	a, b := newKey(t, "a", "*"), newKey(t, "b", "*")
	th, _ := mustHostWith(t, toolsDir(t), func(c *config.Config) {
		c.Auth.Keys = []config.AuthKey{a.Entry, b.Entry}
		c.Policy.SkillRates = []config.SkillRate{{Skill: "strict-*", Rate: "5/h", Per: "all"}, {Skill: "echo", Rate: "2/h"}}
	})
	sessions := map[string]string{}
	for _, k := range []apiKey{a, b} {
		sessions[k.Entry.ID], _ = th.mustAs(t, k.Secret, "_cleveragents/session/create", map[string]any{})["session_id"].(string)
	}
	execute := func(k apiKey) httpReply {
		return th.as(t, k.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": sessions[k.Entry.ID], "skill_id": "echo", "skill_params": map[string]any{"n": 1}})
	}
	for i := range 2 {
		if r := execute(a); r.RPC.Error != nil {
			t.Fatalf("A's call %d within the rate: %s", i+1, r.Body)
		}
	}
	wantRateLimited(t, execute(a), "echo", "echo", "policy.skill_rates[1]")
	for i := range 2 {
		if r := execute(b); r.RPC.Error != nil {
			t.Errorf("B's call %d while A sits at its rate: %s", i+1, r.Body)
		}
	}
	wantRateLimited(t, execute(b), "echo", "echo", "policy.skill_rates[1]")

	families := mustMetrics(t, th, a.Secret)
	if v := sample(families, "skillhost_skill_rate_limited_total", map[string]string{"plugin": "tools", "skill": "echo", "rule": "echo", "per": "key"}); v != 2 {
		t.Errorf("skillhost_skill_rate_limited_total{echo} = %v, want 2", v)
	}
	if v := sample(families, "skillhost_skill_errors_total", map[string]string{"skill": "echo", "reason": "rate_limited"}); v != 2 {
		t.Errorf("skillhost_skill_errors_total{echo, rate_limited} = %v, want 2", v)
	}
	var plugins struct {
		Plugins []struct {
			Skills []struct {
				ID         string           `json:"id"`
				RateLimits []map[string]any `json:"rate_limits"`
			} `json:"skills"`
		} `json:"plugins"`
	}
	mustGetJSON(t, th, a.Secret, "/admin/plugins", &plugins)
	rules := map[string]string{}
	for _, s := range plugins.Plugins[0].Skills {
		for _, r := range s.RateLimits {
			rules[s.ID] += fmt.Sprintf("%s %s per %s; ", r["limit"], r["rate"], r["per"])
		}
	}
	want := map[string]string{"echo": "policy.skill_rates[1] 2/h per key; ", "strict-echo": "policy.skill_rates[0] 5/h per all; "}
	if fmt.Sprint(want) != fmt.Sprint(rules) {
		t.Errorf("/admin/plugins rate_limits = %v, want %v", rules, want)
	}
}

// A per-all rule refuses everyone past it.
func TestSkillRatesPerAll(t *testing.T) {
	t.Parallel()
	a, b := newKey(t, "a", "*"), newKey(t, "b", "*")
	th, _ := mustHostWith(t, toolsDir(t), func(c *config.Config) {
		c.Auth.Keys = []config.AuthKey{a.Entry, b.Entry}
		c.Policy.SkillRates = []config.SkillRate{{Skill: "ech?", Rate: "1/h", Per: "all"}}
	})
	call := func(k apiKey) httpReply {
		sid, _ := th.mustAs(t, k.Secret, "_cleveragents/session/create", map[string]any{})["session_id"].(string)
		return th.as(t, k.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "echo"})
	}
	if r := call(a); r.RPC.Error != nil {
		t.Fatalf("the first call: %s", r.Body)
	}
	wantRateLimited(t, call(a), "echo", "ech?", "policy.skill_rates[0]")
	wantRateLimited(t, call(b), "echo", "ech?", "policy.skill_rates[0]")
}

// Every way to call a skill passes the same rules: skill/execute,
// agent/call, A2A SendMessage and SendStreamingMessage (refused before a
// task exists), an MCP tool call, a plan step and agent_call from a plugin. Each skill may be called
// once an hour; the second call through each way in is refused.
func TestSkillRatesEveryEntryPoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "rated", ratedManifest)
	mustPluginWasm(t, dir, "relay", "relay.wasm", relayManifest("relay", "relay-call", "rated", "rl-nested", "rated"))
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		allowAgents(c)
		c.Policy.SkillRates = []config.SkillRate{{Skill: "rl-*", Rate: "1/h", Per: "all"}}
	})
	sid := th.mustSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	mcp, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp", HTTPClient: httpClient, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer mcp.Close()
	a2a := mustClient(ctx, t, th.URL, a2av1.TransportProtocolJSONRPC)

	tests := []struct {
		name string
		// call calls the way in once and returns the reason it failed
		// with ("" when served).
		call func(t *testing.T) string
	}{
		{"skill/execute", func(t *testing.T) string {
			r := th.as(t, "", "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "rl-exec"})
			if r.RPC.Error != nil {
				wantRateLimited(t, r, "rl-exec", "rl-*", "policy.skill_rates[0]")
			}
			return r.RPC.Error.reason()
		}},
		{"agent/call", func(t *testing.T) string {
			r := th.as(t, "", "_cleveragents/agent/call", map[string]any{"session_id": sid, "target_agent_id": "rated", "method": "rl-agent", "params": map[string]any{}})
			if r.RPC.Error != nil {
				wantRateLimited(t, r, "rl-agent", "rl-*", "policy.skill_rates[0]")
			}
			return r.RPC.Error.reason()
		}},
		{"A2A SendMessage", func(t *testing.T) string {
			res, err := a2a.SendMessage(ctx, message("rl-a2a", map[string]any{"x": 1}))
			if err != nil {
				// the raw request shows the HTTP status the client saw
				wantRefused(t, th.as(t, "", "SendMessage", sendMessage("rl-a2a", map[string]any{})), http.StatusTooManyRequests, -32106, "RATE_LIMITED")
				if !strings.Contains(err.Error(), "429") {
					t.Errorf("a2a-go's error %v does not carry the HTTP 429", err)
				}
				return "rate_limited"
			}
			if task, ok := res.(*a2av1.Task); !ok || task.Status.State != a2av1.TaskStateCompleted {
				t.Errorf("SendMessage = %+v, want a completed task", res)
			}
			return ""
		}},
		{"A2A SendStreamingMessage", func(t *testing.T) string {
			r := th.as(t, "", "SendStreamingMessage", sendMessage("rl-stream", map[string]any{}))
			if r.Status == http.StatusOK && strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
				if !strings.Contains(string(r.Body), "TASK_STATE_COMPLETED") {
					t.Errorf("the stream did not complete the task: %s", r.Body)
				}
				return ""
			}
			wantRefused(t, r, http.StatusTooManyRequests, -32106, "RATE_LIMITED") // before any event: no task
			return "rate_limited"
		}},
		{"MCP tools/call", func(t *testing.T) string {
			res, err := mcp.CallTool(ctx, &sdk.CallToolParams{Name: "rl-mcp", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				return ""
			}
			sc, _ := res.StructuredContent.(map[string]any)
			reason, _ := sc["reason"].(string)
			return reason
		}},
		{"plan step", func(t *testing.T) string {
			id := fmt.Sprintf("p-%d", time.Now().UnixNano())
			def := map[string]any{"name": "rated", "steps": []any{map[string]any{"id": "s", "type": "skill", "action": "rl-plan", "params": map[string]any{}}}}
			th.mustResult(t, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_id": id, "plan_definition": def})
			th.mustResult(t, "_cleveragents/plan/execute", map[string]any{"session_id": sid, "plan_id": id})
			var st struct {
				Status string `json:"status"`
				Steps  []struct {
					Error *struct {
						Details map[string]any `json:"details"`
					} `json:"error"`
				} `json:"steps"`
			}
			if !waitFor(60*time.Second, func() bool {
				raw, _ := json.Marshal(th.mustResult(t, "_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": id}))
				_ = json.Unmarshal(raw, &st)
				return st.Status == "completed" || st.Status == "failed"
			}) {
				t.Fatalf("plan %s did not end: %+v", id, st)
			}
			if st.Status == "completed" {
				return ""
			}
			if len(st.Steps) == 0 || st.Steps[0].Error == nil {
				t.Fatalf("failed plan without a step error: %+v", st)
			}
			reason, _ := st.Steps[0].Error.Details["reason"].(string)
			return reason
		}},
		{"agent_call from a plugin", func(t *testing.T) string {
			got, _ := unwrap(t, th.execute(t, sid, "relay-call", map[string]any{}))
			if got.OK {
				return ""
			}
			if got.Error.Data["rpc_code"] != -32106.0 {
				t.Errorf("agent_call refusal data %v, want rpc_code -32106", got.Error.Data)
			}
			return got.Error.Code
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.call(t); got != "" {
				t.Fatalf("first call refused: %s", got)
			}
			if got := tt.call(t); got != "rate_limited" {
				t.Errorf("second call within the hour: %q, want rate_limited", got)
			}
		})
	}
	// A refused SendMessage started no task: only the first one is listed.
	list := th.mustResult(t, "ListTasks", map[string]any{})
	if tasks, _ := list["tasks"].([]any); len(tasks) != 3 { // the A2A calls and the MCP one (MCP runs through SendMessage)
		t.Errorf("ListTasks lists %d tasks, want 3 (the served A2A, streamed and MCP calls): %v", len(tasks), list)
	}
	// A skill no rule matches is not limited, on the same host.
	for range 3 {
		if r := th.as(t, "", "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "free"}); r.RPC.Error != nil {
			t.Fatalf("free: %s", r.Body)
		}
	}
}
