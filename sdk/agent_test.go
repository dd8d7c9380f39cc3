package sdk

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCallAgent(t *testing.T) {
	t.Parallel()
	ctx, r := mustContext(t, okReply(t, map[string]any{"agent_id": "billing-backup", "method": "charge", "result": map[string]int{"id": 7}, "execution_time_ms": 12, "fallback_from": "billing"}))
	res, err := ctx.CallAgent(AgentCall{Agent: "billing", Method: "charge", Params: map[string]int{"cents": 5}, Timeout: 1500 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	var out struct{ ID int }
	if err := res.Decode(&out); err != nil || out.ID != 7 || res.AgentID != "billing-backup" || res.FallbackFrom != "billing" || res.Duration != 12*time.Millisecond {
		t.Errorf("result = %+v (%+v, %v)", res, out, err)
	}
	if _, err := ctx.CallAgent(AgentCall{Agent: "a", Method: "m", Params: json.RawMessage(`[1,2]`)}); err != nil {
		t.Fatal(err)
	}
	want := []hostCall{
		{"agent_call", `{"agent":"billing","method":"charge","params":{"cents":5},"timeout_ms":2}`}, // 1.5 ms rounds up
		{"agent_call", `{"agent":"a","method":"m","params":[1,2]}`},
	}
	if diff := cmp.Diff(want, r.calls); diff != "" {
		t.Errorf("host calls (-want +got):\n%s", diff)
	}
	if _, err := ctx.CallAgent(AgentCall{Agent: "a", Method: "m", Timeout: -time.Second}); err == nil {
		t.Error("negative timeout accepted")
	}
	if _, err := ctx.CallAgent(AgentCall{Agent: "a", Method: "m", Params: make(chan int)}); err == nil {
		t.Error("params that do not encode accepted")
	}
}

func TestCallAgentError(t *testing.T) {
	t.Parallel()
	ctx, _ := mustContext(t, func(string, []byte) []byte {
		return []byte(`{"ok":false,"error":{"code":"call_depth","message":"too deep","data":{"reason":"call_depth","rpc_code":-32106}}}`)
	})
	_, err := ctx.CallAgent(AgentCall{Agent: "a", Method: "m"})
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeCallDepth {
		t.Fatalf("error = %v, want code %s", err, CodeCallDepth)
	}
	if diff := cmp.Diff(map[string]any{"reason": "call_depth", "rpc_code": -32106.0}, e.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}
