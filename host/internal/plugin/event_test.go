package plugin

import (
	"context"
	"testing"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

func TestDeliverEvent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	pluginSpec{name: "listener", extra: "events: {function: echo}"}.write(t, root)
	pluginSpec{name: "crasher", extra: "events: {function: trap}\nlimits: {timeout: 5s}"}.write(t, root)
	pluginSpec{name: "deaf"}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		agent     string
		delivered bool
		kind      fault.Kind
		reason    string
	}{
		{"listener", true, 0, ""},
		{"deaf", false, 0, ""},
		{"crasher", true, fault.SkillFailed, fault.ReasonTrap},
		{"nobody", false, fault.AgentNotFound, fault.ReasonUnknownAgent},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			t.Parallel()
			ok, err := r.DeliverEvent(auth.Invoke(context.Background(), auth.Invocation{SessionID: "s", RequestID: "n1"}),
				EventCall{Agent: tt.agent, Input: []byte(`{"id":"n1","event":"e"}`)})
			if ok != tt.delivered {
				t.Errorf("delivered %v, want %v", ok, tt.delivered)
			}
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			fe := fault.From(err)
			if err == nil || fe.Kind != tt.kind || fe.Reason != tt.reason {
				t.Fatalf("error %v, want %v %s", err, tt.kind, tt.reason)
			}
			if tt.kind == fault.SkillFailed && (fe.Data["plugin"] != tt.agent || fe.Data["function"] != "trap" || fe.Data["session_id"] != "s") {
				t.Errorf("error data %v", fe.Data)
			}
		})
	}
}
