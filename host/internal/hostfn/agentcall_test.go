package hostfn_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// agentDesk is the AgentCaller of these tests: it answers as told and
// keeps what it was asked (the router behind agent_call is tested with
// real plugins and peers in host/ and host/internal/agents).
type agentDesk struct {
	mu        sync.Mutex
	calls     []hostfn.AgentCall
	deadlines []bool
	answer    func(hostfn.AgentCall) (*hostfn.AgentResult, error)
}

func (d *agentDesk) CallAgent(ctx context.Context, c hostfn.AgentCall) (*hostfn.AgentResult, error) {
	d.mu.Lock()
	_, hasDeadline := ctx.Deadline()
	d.calls = append(d.calls, c)
	d.deadlines = append(d.deadlines, hasDeadline)
	answer := d.answer
	d.mu.Unlock()
	return answer(c)
}

// TestGuestAgentCall drives agent_call through the SDK in a real plugin:
// what the manifest permits reaches the router with the call's session and
// deadline; the rest is refused before it; failures reach the guest with
// their reason (or the called plugin's own code) and data.
func TestGuestAgentCall(t *testing.T) {
	t.Parallel()
	desk := &agentDesk{answer: func(c hostfn.AgentCall) (*hostfn.AgentResult, error) {
		switch c.Method {
		case "slow":
			return nil, fault.New(fault.Timeout, fault.ReasonTimeout, "too slow").With("agent_id", c.Target)
		case "nested":
			return nil, fault.New(fault.SkillFailed, fault.ReasonPluginError, "deep down").
				With("plugin_code", "call_depth").With("plugin_data", map[string]any{"depth": 9}).With("agent_id", c.Target)
		case "text":
			return &hostfn.AgentResult{AgentID: c.Target, Method: c.Method, Output: []byte("plain words")}, nil
		}
		return &hostfn.AgentResult{AgentID: "billing-backup", FallbackFrom: c.Target, Method: c.Method, Output: c.Input, Duration: 3 * time.Millisecond}, nil
	}}
	inst := mustCompile(t, hostfn.Deps{Agents: desk}, hostfn.Grant{Plugin: "caller", Agents: []string{"billing", "text-*"}}).mustInstance(t)
	call := as(auth.Invocation{SessionID: "s1", RequestID: "r1"}, &hostfn.Call{Plugin: "caller", Skill: "call_agent"})
	run := func(in map[string]any) (map[string]any, *guestError) {
		out, gerr := inst.call(call, "call_agent", in)
		if gerr != nil {
			return nil, gerr
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		return v, nil
	}

	got, gerr := run(map[string]any{"agent": "billing", "method": "charge", "params": map[string]any{"cents": 5}, "timeout_ms": 1500})
	if gerr != nil {
		t.Fatalf("permitted call: %+v", gerr)
	}
	if diff := cmp.Diff(map[string]any{"agent_id": "billing-backup", "fallback_from": "billing", "result": map[string]any{"cents": 5.0}}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if got, gerr := run(map[string]any{"agent": "text-tools", "method": "text"}); gerr != nil || got["result"] != "plain words" {
		t.Errorf("text output = %v, %+v; want a JSON string", got, gerr)
	}

	tests := []struct {
		name string
		in   map[string]any
		want guestError
	}{
		{"not permitted", map[string]any{"agent": "payroll", "method": "pay"},
			guestError{Code: fault.GuestAgentNotAllowed}},
		{"bad agent id", map[string]any{"agent": "Bad Agent", "method": "m"}, guestError{Code: fault.GuestBadRequest}},
		{"no method", map[string]any{"agent": "billing"}, guestError{Code: fault.GuestBadRequest}},
		{"method too long", map[string]any{"agent": "billing", "method": strings.Repeat("m", hostfn.MaxAgentCallMethod+1)},
			guestError{Code: fault.GuestBadRequest}},
		{"timeout over a day", map[string]any{"agent": "billing", "method": "m", "timeout_ms": (25 * time.Hour).Milliseconds()},
			guestError{Code: fault.GuestBadRequest}},
		{"request over the cap", map[string]any{"agent": "billing", "method": "m", "params": map[string]string{"blob": strings.Repeat("x", hostfn.MaxAgentCallRequest)}},
			guestError{Code: fault.GuestRequestTooLarge}},
		{"timeout", map[string]any{"agent": "billing", "method": "slow"},
			guestError{Code: "timeout", Data: map[string]any{"reason": "timeout", "rpc_code": -32104.0, "agent_id": "billing"}}},
		{"plugin's own code passed on", map[string]any{"agent": "text-x", "method": "nested"},
			guestError{Code: "call_depth", Data: map[string]any{"reason": "plugin_error", "rpc_code": -32103.0, "agent_id": "text-x", "plugin_data": map[string]any{"depth": 9.0}}}},
	}
	for _, tt := range tests {
		_, gerr := run(tt.in)
		if gerr == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		gerr.Message = ""
		if diff := cmp.Diff(&tt.want, gerr); diff != "" {
			t.Errorf("%s: error (-want +got):\n%s", tt.name, diff)
		}
	}

	desk.mu.Lock()
	defer desk.mu.Unlock()
	want := hostfn.AgentCall{Target: "billing", Method: "charge", Input: json.RawMessage(`{"cents":5}`), Timeout: 1500 * time.Millisecond,
		SessionID: "s1", RequestID: "r1", Caller: "caller"}
	if len(desk.calls) != 4 {
		t.Fatalf("router asked %d times, want 4 (refusals never reach it)", len(desk.calls))
	}
	if diff := cmp.Diff(want, desk.calls[0]); diff != "" {
		t.Errorf("call (-want +got):\n%s", diff)
	}
	for i, ok := range desk.deadlines {
		if !ok {
			t.Errorf("call %d reached the router without the plugin call's deadline", i)
		}
	}

	none := mustCompile(t, hostfn.Deps{}, hostfn.Grant{Plugin: "caller", Agents: []string{"*"}}).mustInstance(t)
	if _, gerr := none.call(call, "call_agent", map[string]any{"agent": "billing", "method": "m"}); gerr == nil || gerr.Code != fault.GuestUnavailable {
		t.Errorf("no router: %+v, want %s", gerr, fault.GuestUnavailable)
	}
}
