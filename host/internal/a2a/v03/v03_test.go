package v03_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/v03"
)

// A v0.3 client's params become the v1.0 request the task service takes;
// what it cannot send is refused as invalid params (-32602), never as an
// internal error.
func TestDecodeV03Params(t *testing.T) {
	t.Parallel()
	const msg = `{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}`
	for _, tc := range []struct {
		name    string
		decode  func(json.RawMessage) (any, error)
		params  string
		want    string // the v1.0 request's JSON, or the refusal's message
		refused bool
	}{
		{"send", wrap(v03.SendMessage), `{"message":` + msg + `}`,
			`{"message":{"messageId":"m1","parts":[{"text":"hi"}],"role":"ROLE_USER"}}`, false},
		{"send without params", wrap(v03.SendMessage), ``, "params are required", true},
		{"send without message", wrap(v03.SendMessage), `{}`, "params.message is required", true},
		{"send not an object", wrap(v03.SendMessage), `[1]`, "params: ", true},
		{"get", wrap(v03.GetTask), `{"id":"t1","historyLength":2}`, `{"id":"t1","historyLength":2}`, false},
		{"list without params", wrap(v03.ListTasks), ``, `{"historyLength":0}`, false}, // a2av0's: v0.3 lists without history unless asked
		{"cancel", wrap(v03.CancelTask), `{"id":"t1"}`, `{"id":"t1"}`, false},
		{"resubscribe", wrap(v03.SubscribeToTask), `{"id":"t1"}`, `{"id":"t1"}`, false},
		{"push get without config id", wrap(v03.GetPushConfig), `{"id":"t1"}`, `{"taskId":"t1","id":""}`, false},
		{"push delete", wrap(v03.DeletePushConfig), `{"id":"t1","pushNotificationConfigId":"c1"}`, `{"taskId":"t1","id":"c1"}`, false},
		{"push set", wrap(v03.CreatePushConfig), `{"taskId":"t1","pushNotificationConfig":{"id":"c1","url":"https://example.com/hook"}}`,
			`{"taskId":"t1","id":"c1","url":"https://example.com/hook"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.decode(json.RawMessage(tc.params))
			if tc.refused {
				fe := fault.From(err)
				if fe == nil || fe.Kind != fault.InvalidParams || fe.Reason != fault.ReasonInvalidParams || !strings.Contains(fe.Msg, tc.want) {
					t.Fatalf("got %v, %v; want invalid_params %q", got, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if diff := cmp.Diff(normal(t, tc.want), normal(t, string(b))); diff != "" {
				t.Errorf("v1.0 request (-want +got):\n%s", diff)
			}
		})
	}
}

func wrap[T any](f func(json.RawMessage) (T, error)) func(json.RawMessage) (any, error) {
	return func(p json.RawMessage) (any, error) { return f(p) }
}

func normal(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

// v0.3 results carry the v0.3 member names and kinds, and a card has no
// null lists (v0.3 parsers that range over skills would fail on null).
func TestEncodeV03Shapes(t *testing.T) {
	t.Parallel()
	task := &a2av1.Task{ID: "t1", ContextID: "c1", Status: a2av1.TaskStatus{State: a2av1.TaskStateInputRequired}}
	ev, err := v03.Event(a2av1.NewStatusUpdateEvent(task, a2av1.TaskStateWorking, nil))
	if err != nil {
		t.Fatal(err)
	}
	card := v03.Card(&a2av1.AgentCard{Name: "x"})
	for _, tc := range []struct {
		name string
		v    any
		want map[string]any // members the v0.3 JSON must have
	}{
		{"task", v03.Task(task), map[string]any{"kind": "task", "id": "t1", "contextId": "c1",
			"status": map[string]any{"state": "input-required"}}},
		{"event", ev, map[string]any{"kind": "status-update", "taskId": "t1", "status": map[string]any{"state": "working"}}},
		{"card", card, map[string]any{"name": "x", "skills": []any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, _ := json.Marshal(tc.v)
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for k, v := range got {
				if v == nil && k != "defaultInputModes" && k != "defaultOutputModes" {
					t.Errorf("%s: member %s is null in %s", tc.name, k, b)
				}
			}
			for k, want := range tc.want {
				if diff := cmp.Diff(want, pick(got[k], want)); diff != "" {
					t.Errorf("%s: member %s (-want +got):\n%s\nin %s", tc.name, k, diff, b)
				}
			}
		})
	}
}

// The access line names a v0.3 send's skill from its result's metadata.
func TestTaskMetadata(t *testing.T) {
	t.Parallel()
	task := &a2av1.Task{ID: "t1", Metadata: map[string]any{"skillId": "echo", "plugin": "demo"}}
	if got, ok := v03.TaskMetadata(v03.Task(task)); !ok || got["skillId"] != "echo" || got["plugin"] != "demo" {
		t.Errorf("TaskMetadata(v0.3 task) = %v, %v", got, ok)
	}
	if _, ok := v03.TaskMetadata(task); ok {
		t.Error("TaskMetadata took a v1.0 task for a v0.3 one")
	}
}

// The union card has the v0.3 members (url, protocolVersion,
// preferredTransport) beside the v1.0 ones, and each security scheme in
// both forms with the v1.0 requirements it is given.
func TestUnionCard(t *testing.T) {
	t.Parallel()
	card := &a2av1.AgentCard{Name: "x", SupportedInterfaces: []*a2av1.AgentInterface{
		{URL: "https://h.example/rpc", ProtocolBinding: a2av1.TransportProtocolJSONRPC, ProtocolVersion: "1.0"},
		{URL: "https://h.example/rpc", ProtocolBinding: a2av1.TransportProtocolJSONRPC, ProtocolVersion: "0.3"},
	}}
	plain, err := v03.Union(context.Background(), card, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(plain, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"url": "https://h.example/rpc", "protocolVersion": "0.3", "preferredTransport": "JSONRPC", "name": "x"}
	if diff := cmp.Diff(want, pick(got, want)); diff != "" {
		t.Errorf("union card (-want +got):\n%s", diff)
	}
	if _, ok := got["supportedInterfaces"]; !ok {
		t.Errorf("union card has no supportedInterfaces: %s", plain)
	}
	card.SecuritySchemes = a2av1.NamedSecuritySchemes{"apiKey": a2av1.APIKeySecurityScheme{Location: a2av1.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key"}}
	secured, err := v03.Union(context.Background(), card, json.RawMessage(`[{"schemes":{"apiKey":{}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	if err := json.Unmarshal(secured, &got); err != nil {
		t.Fatal(err)
	}
	scheme, _ := got["securitySchemes"].(map[string]any)["apiKey"].(map[string]any)
	for _, k := range []string{"type", "in", "name", "apiKeySecurityScheme"} { // v0.3 and v1.0 forms
		if _, ok := scheme[k]; !ok {
			t.Errorf("apiKey scheme has no %q: %v", k, scheme)
		}
	}
	if diff := cmp.Diff(normal(t, `[{"schemes":{"apiKey":{}}}]`), got["securityRequirements"]); diff != "" {
		t.Errorf("securityRequirements (-want +got):\n%s", diff)
	}
}

// pick keeps of got only the members want names (nested objects too).
func pick(got, want any) any {
	w, ok := want.(map[string]any)
	g, gok := got.(map[string]any)
	if !ok || !gok {
		return got
	}
	out := map[string]any{}
	for k := range w {
		if v, ok := g[k]; ok {
			out[k] = pick(v, w[k])
		}
	}
	return out
}
