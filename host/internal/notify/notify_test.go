package notify

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// mustService is a Service over a real bus (embedded NATS) and a real
// registry serving the hostile fixture as three plugins: one whose events
// export echoes, one whose events export traps, one without events.
func mustService(t *testing.T) (*Service, *events.Bus) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	bus, err := events.Open(ctx, st, events.Config{})
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join("..", "sandbox", "testdata", "hostile.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for name, extra := range map[string]string{"listener": "events: {function: echo}\n", "crasher": "events: {function: trap}\n", "deaf": ""} {
		dir := filepath.Join(root, name)
		manifest := "name: " + name + "\nversion: 1.0.0\ndescription: fixture\nwasm: plugin.wasm\n" + extra +
			"skills:\n  - {id: " + name + "-echo, function: echo, description: echoes}\n"
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, b := range map[string][]byte{"plugin.wasm": wasm, "plugin.yaml": []byte(manifest)} {
			if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	reg := plugin.NewRegistry(rt, plugin.RegistryOptions{Logger: quiet})
	t.Cleanup(func() { _ = reg.Close(ctx); _ = rt.Close(ctx) })
	if err := reg.LoadDir(ctx, root); err != nil {
		t.Fatal(err)
	}
	// Plugins compile in the background; on a loaded machine a first
	// call could outwait its deadline (plugin_loading) behind them.
	testutil.MustCompiled(t, reg)
	return New(Deps{Bus: bus, Agents: reg, Logger: quiet}), bus
}

func TestNotify(t *testing.T) {
	t.Parallel()
	svc, _ := mustService(t)
	ctx := context.Background()
	tests := []struct {
		name string
		n    Notification
		want Result // NotificationID checked only when n.ID is set
	}{
		{"delivered", Notification{ID: "n1", Owner: "key:a", SessionID: "s", Target: "listener", Event: "e"}, Result{NotificationID: "n1", Status: "accepted", Delivered: true}},
		{"same id again", Notification{ID: "n1", Owner: "key:a", SessionID: "s", Target: "listener", Event: "e"}, Result{NotificationID: "n1", Status: "duplicate"}},
		{"same id, another owner", Notification{ID: "n1", Owner: "key:b", SessionID: "s", Target: "listener", Event: "e"}, Result{NotificationID: "n1", Status: "accepted", Delivered: true}},
		{"same id, another target", Notification{ID: "n1", Owner: "key:a", SessionID: "s", Target: "deaf", Event: "e"}, Result{NotificationID: "n1", Status: "accepted"}},
		{"no events export", Notification{ID: "n2", Target: "deaf", Event: "e"}, Result{NotificationID: "n2", Status: "accepted"}},
		{"not a local agent", Notification{ID: "n3", Target: "elsewhere", Event: "e"}, Result{NotificationID: "n3", Status: "accepted"}},
		{"no target", Notification{ID: "n4", Event: "e"}, Result{NotificationID: "n4", Status: "accepted"}},
		{"export traps", Notification{ID: "n5", Target: "crasher", Event: "e"},
			Result{NotificationID: "n5", Status: "accepted", Error: &DeliveryErr{Code: fault.SkillFailed.Code(), Reason: fault.ReasonTrap, Kind: "SkillFailed"}}},
		{"no id: never a duplicate", Notification{Target: "listener", Event: "e"}, Result{Status: "accepted", Delivered: true}},
	}
	for _, tt := range tests { // in order: the duplicates depend on the earlier ones
		got, err := svc.Notify(ctx, tt.n)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if tt.n.ID == "" {
			if !strings.HasPrefix(got.NotificationID, "ntf_") {
				t.Errorf("%s: generated id %q", tt.name, got.NotificationID)
			}
			got.NotificationID = ""
		}
		if got.Error != nil {
			got.Error.Message = ""
		}
		if diff := cmp.Diff(tt.want, *got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestNotifyRefusesBadNotifications(t *testing.T) {
	t.Parallel()
	svc, _ := mustService(t)
	tests := []struct {
		name  string
		n     Notification
		field string
	}{
		{"no event", Notification{}, "event"},
		{"long event", Notification{Event: strings.Repeat("e", MaxEventBytes+1)}, "event"},
		{"control character", Notification{Event: "a\nb"}, "event"},
		{"long id", Notification{Event: "e", ID: strings.Repeat("i", MaxIDBytes+1)}, "request_id"},
		{"long target", Notification{Event: "e", Target: strings.Repeat("t", 300)}, "target_agent_id"},
		{"data over the cap", Notification{Event: "e", Data: json.RawMessage(`"` + strings.Repeat("d", MaxDataBytes) + `"`)}, "data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := svc.Notify(context.Background(), tt.n)
			if fe := fault.From(err); err == nil || fe.Kind != fault.InvalidParams || fe.Data["field"] != tt.field {
				t.Errorf("error %v, want InvalidParams on field %s", err, tt.field)
			}
		})
	}
}

// TestNotifyIsRecordedForSubscribers: every notification, delivered or
// not, is an agent.notify event of its owner.
func TestNotifyIsRecordedForSubscribers(t *testing.T) {
	t.Parallel()
	svc, bus := mustService(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub, err := bus.Subscribe(ctx, events.Filter{Owners: []string{"key:a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for _, n := range []Notification{
		{ID: "x", Owner: "key:b", Event: "theirs"},
		{ID: "y", Owner: "key:a", SessionID: "s", Target: "elsewhere", Event: "mine", Data: json.RawMessage(`{"k":1}`)},
	} {
		if _, err := svc.Notify(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	ev, err := sub.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(ev.Data, &data); err != nil {
		t.Fatal(err)
	}
	delete(data, "timestamp")
	want := map[string]any{"id": "y", "event": "mine", "session_id": "s", "target_agent_id": "elsewhere", "data": map[string]any{"k": float64(1)}}
	if diff := cmp.Diff(want, data); diff != "" || ev.Type != events.AgentNotify || ev.SessionID != "s" {
		t.Errorf("event %s %s (-want +got):\n%s", ev.Type, ev.SessionID, diff)
	}
}
