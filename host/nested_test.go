package host_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// relayManifest is a plugin named name whose skill skill (export "call" of
// relay.wasm) calls agent/method with its input as params through
// agent_call, and outputs agent_call's reply envelope; agents is its
// permissions.agents.
func relayManifest(name, skill, agent, method string, agents ...string) string {
	prefix := fmt.Sprintf(`{"agent":%q,"method":%q,"params":`, agent, method)
	quoted, _ := json.Marshal(prefix)
	list, _ := json.Marshal(agents)
	return fmt.Sprintf(`name: %s
version: 1.0.0
description: Calls %s/%s through agent_call
wasm: relay.wasm
limits: {timeout: 10s, memory: 16MiB, output: 1MiB, concurrency: 16}
permissions:
  agents: %s
  config: {request_prefix: %s}
skills:
  - id: %s
    description: Calls %s/%s
    function: call
`, name, agent, method, list, quoted, skill, agent, method)
}

// allowAgents lets manifests ask for any agent.
func allowAgents(c *config.Config) { c.Policy.AllowedAgentPatterns = []string{"*"} }

// envelope is agent_call's reply as a relay outputs it.
type envelope struct {
	OK     bool `json:"ok"`
	Result *struct {
		AgentID string          `json:"agent_id"`
		Method  string          `json:"method"`
		Result  json.RawMessage `json:"result"`
	} `json:"result"`
	Error *struct {
		Code string         `json:"code"`
		Data map[string]any `json:"data"`
	} `json:"error"`
}

// unwrap follows a chain of relays' envelopes to the innermost one and
// returns it with the number of successful calls around it.
func unwrap(t *testing.T, raw json.RawMessage) (envelope, int) {
	t.Helper()
	hops := 0
	for {
		var e envelope
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("not an envelope: %s", raw)
		}
		var inner struct {
			OK *bool `json:"ok"`
		}
		if !e.OK || e.Result == nil || json.Unmarshal(e.Result.Result, &inner) != nil || inner.OK == nil {
			return e, hops
		}
		hops++
		raw = e.Result.Result
	}
}

// execute runs skill with input and returns its output.
func (th *testHost) execute(t *testing.T, sid, skill string, input any) json.RawMessage {
	t.Helper()
	res := th.mustResult(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": skill, "skill_params": input})
	out, err := json.Marshal(res["output"])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNestedCall: a plugin calls a plugin of its host through agent_call —
// only the agents its manifest lists, and only what the operator's policy
// lets manifests ask for.
func TestNestedCall(t *testing.T) {
	t.Parallel()
	dir := toolsDir(t)
	mustPluginWasm(t, dir, "relay", "relay.wasm", relayManifest("relay", "call", "tools", "echo", "tools"))
	mustPluginWasm(t, dir, "sneaky", "relay.wasm", relayManifest("sneaky", "sneak", "tools", "echo", "text-*"))
	mustPluginWasm(t, dir, "greedy", "relay.wasm", relayManifest("greedy", "grab", "tools", "echo", "*"))
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Policy.AllowedAgentPatterns = []string{"tools", "text-*"} })
	sid := th.mustSession(t)

	got, _ := unwrap(t, th.execute(t, sid, "call", map[string]any{"x": 1}))
	if !got.OK || got.Result.AgentID != "tools" || string(got.Result.Result) != `{"x":1}` {
		t.Errorf("nested call = %+v, want tools' echo of {\"x\":1}", got)
	}
	denied, _ := unwrap(t, th.execute(t, sid, "sneak", map[string]any{}))
	if denied.OK || denied.Error.Code != "agent_not_allowed" {
		t.Errorf("call outside permissions.agents = %+v, want agent_not_allowed", denied)
	}
	wantError(t, th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "grab"}), -32602, "unknown_skill")
}

// TestNestedDepthOnOneHost: a plugin calling itself ends at
// agents.max_call_depth with call_depth.
func TestNestedDepthOnOneHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPluginWasm(t, dir, "loop", "relay.wasm", relayManifest("loop", "spin", "loop", "spin", "loop"))
	th, _ := mustHostWith(t, dir, func(c *config.Config) { allowAgents(c); c.Agents.MaxCallDepth = 3 })
	inner, hops := unwrap(t, th.execute(t, th.mustSession(t), "spin", map[string]any{}))
	if inner.OK || inner.Error.Code != "call_depth" || hops != 3 {
		t.Errorf("innermost = %+v after %d hops, want call_depth after 3 (the fourth call refused)", inner, hops)
	}
}

// TestNestedCallAsOriginalCaller: a nested call acts for the key that
// called the plugin: its scopes decide, not the plugin's.
func TestNestedCallAsOriginalCaller(t *testing.T) {
	t.Parallel()
	dir := toolsDir(t)
	mustPluginWasm(t, dir, "relay", "relay.wasm", relayManifest("relay", "call", "tools", "echo", "tools"))
	narrow := newKey(t, "narrow", "skill:call", "method:_cleveragents/*")
	wide := newKey(t, "wide", "skill:call", "agent:tools", "method:_cleveragents/*")
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		allowAgents(c)
		c.Auth.Keys = []config.AuthKey{narrow.Entry, wide.Entry}
	})
	for _, tt := range []struct {
		key  apiKey
		want string // "" = answered
	}{{narrow, "scope_denied"}, {wide, ""}} {
		sid, _ := th.mustAs(t, tt.key.Secret, "_cleveragents/session/create", map[string]any{})["session_id"].(string)
		res := th.mustAs(t, tt.key.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "call", "skill_params": map[string]any{}})
		raw, _ := json.Marshal(res["output"])
		got, _ := unwrap(t, raw)
		switch {
		case tt.want == "" && !got.OK:
			t.Errorf("%s: nested call refused: %+v", tt.key, got.Error)
		case tt.want != "" && (got.OK || got.Error.Code != tt.want):
			t.Errorf("%s: nested call = %+v, want %s", tt.key, got, tt.want)
		}
	}
}

// TestNestedCycleBetweenHosts: a plugin on A calls a plugin on B, which
// calls the one on A, and so on: the chain ends after agents.max_call_depth
// hops, counted across both hosts, with call_depth.
func TestNestedCycleBetweenHosts(t *testing.T) {
	t.Parallel()
	ra, rb := newRelay(t), newRelay(t)
	hostWith := func(self, other *relay) *testHost {
		dir := t.TempDir()
		mustPluginWasm(t, dir, "bouncer", "relay.wasm", relayManifest("bouncer", "bounce", "other", "bounce", "other"))
		th, _ := mustHostWith(t, dir, func(c *config.Config) {
			allowAgents(c)
			c.PublicURL = self.srv.URL
			c.Agents.MaxCallDepth = 6
			o := remoteAgent("other", other.srv.URL)
			o.Agent = "bouncer"
			c.Agents.Remote = []config.RemoteAgent{o}
		})
		return th
	}
	a, b := hostWith(ra, rb), hostWith(rb, ra)
	ra.to(t, a.URL)
	rb.to(t, b.URL)
	inner, hops := unwrap(t, a.execute(t, a.mustSession(t), "bounce", map[string]any{"n": 1}))
	if inner.OK || inner.Error.Code != "call_depth" || hops != 6 {
		t.Errorf("innermost = %+v after %d hops, want call_depth after 6 (the seventh refused)", inner, hops)
	}
	if n := ra.requests.Load() + rb.requests.Load(); n > 12 {
		t.Errorf("%d requests crossed between the hosts, want at most 12 (6 forwards, each with its session)", n)
	}
}

// TestNestedRemoteDeadline: a nested call to a peer that never answers ends
// with the calling plugin's own deadline, not the peer's timeout.
func TestNestedRemoteDeadline(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	peer := httptest.NewServer(mux)
	t.Cleanup(peer.Close)
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"name":"slow","description":"","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
			"capabilities":{"extensions":[{"uri":"https://skillhost.dev/ext/cleveragents/v1"}]},"skills":[]}`, peer.URL+"/rpc")
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Method == "_cleveragents/session/create" {
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"session_id":"s"}}`)
			return
		}
		<-r.Context().Done() // hangs until the caller gives up
	})
	dir := t.TempDir()
	mustPluginWasm(t, dir, "relay", "relay.wasm", strings.Replace(relayManifest("relay", "call", "slow", "m", "slow"), "timeout: 10s", "timeout: 1s", 1))
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		allowAgents(c)
		c.Agents.Remote = []config.RemoteAgent{{ID: "slow", URL: peer.URL}} // default timeouts: 30s, attempt 10s
	})
	sid := th.mustSession(t)
	start := time.Now()
	r := th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "call"})
	took := time.Since(start)
	if r.Error != nil {
		wantError(t, r, -32104, "timeout")
	} else if inner, _ := unwrap(t, r.Result); inner.OK || inner.Error.Code != "timeout" {
		t.Errorf("nested call to a hanging peer = %s, want a timeout", r.Result)
	}
	if took > 8*time.Second {
		t.Errorf("the call took %v; the plugin's limit is 1s", took)
	}
}

// TestPlanRemoteStep: a plan step of type "agent" naming a remote agent runs
// on that peer.
func TestPlanRemoteStep(t *testing.T) {
	t.Parallel()
	b := mustHost(t, toolsDir(t))
	a, _ := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		c.Agents.Remote = []config.RemoteAgent{remoteAgent("b-tools", b.URL)}
	})
	sid := a.mustSession(t)
	def := map[string]any{"name": "remote", "steps": []any{
		map[string]any{"id": "s1", "type": "agent", "agent": "b-tools", "action": "echo", "params": map[string]any{"from": "a plan"}},
	}}
	a.mustResult(t, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_id": "p", "plan_definition": def})
	a.mustResult(t, "_cleveragents/plan/execute", map[string]any{"session_id": sid, "plan_id": "p"})
	var status map[string]any
	if !waitFor(60*time.Second, func() bool {
		status = a.mustResult(t, "_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": "p"})
		return status["status"] != "executing"
	}) || status["status"] != "completed" {
		t.Fatalf("plan = %v, want completed", status)
	}
	if diff := cmp.Diff(map[string]any{"from": "a plan"}, status["result"]); diff != "" {
		t.Errorf("plan result (-want +got):\n%s", diff)
	}
}
