package host_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	legacy "github.com/a2aproject/a2a-go/a2a"
	legacyclient "github.com/a2aproject/a2a-go/a2aclient"
	legacycard "github.com/a2aproject/a2a-go/a2aclient/agentcard"
	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/google/go-cmp/cmp"
)

// bindingsManifest has a quick skill and one that runs until canceled.
const bindingsManifest = `name: tools
version: 1.0.0
description: Binding test skills
wasm: hostile.wasm
limits: {timeout: 30s, memory: 16MiB, output: 64KiB, concurrency: 4}
skills:
  - {id: echo, function: echo, description: Returns its input unchanged}
  - {id: spin, function: loop, description: Never returns}
`

// mustClient is an official a2a-go v2 client of th's card speaking only
// binding (JSON-RPC or HTTP+JSON), as its card advertises it.
func mustClient(ctx context.Context, t *testing.T, url string, binding a2av1.TransportProtocol) *a2aclient.Client {
	t.Helper()
	card, err := (&agentcard.Resolver{Client: httpClient}).Resolve(ctx, url)
	if err != nil {
		t.Fatalf("resolve the card: %v", err)
	}
	var opt a2aclient.FactoryOption
	switch binding {
	case a2av1.TransportProtocolJSONRPC:
		opt = a2aclient.WithJSONRPCTransport(httpClient)
	default:
		opt = a2aclient.WithRESTTransport(httpClient)
	}
	cl, err := a2aclient.NewFromCard(ctx, card, opt, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2av1.TransportProtocol{binding}}))
	if err != nil {
		t.Fatalf("client for %s: %v", binding, err)
	}
	return cl
}

// checkStream streams an echo task over cl (the task first, then working
// and completed) and checks that a stream refused before it starts (an
// unknown skill) is an error, not an event.
func checkStream(ctx context.Context, t *testing.T, cl *a2aclient.Client) {
	t.Helper()
	var states []a2av1.TaskState
	var first a2av1.Event
	for ev, err := range cl.SendStreamingMessage(ctx, message("echo", map[string]any{"n": 1})) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		if first == nil {
			first = ev
		}
		if su, ok := ev.(*a2av1.TaskStatusUpdateEvent); ok {
			states = append(states, su.Status.State)
		}
	}
	if _, ok := first.(*a2av1.Task); !ok {
		t.Errorf("first stream event %T, want the task", first)
	}
	if diff := cmp.Diff([]a2av1.TaskState{a2av1.TaskStateWorking, a2av1.TaskStateCompleted}, states); diff != "" {
		t.Errorf("stream states (-want +got):\n%s", diff)
	}
	// A stream refused before it starts is an error, not an event.
	for _, err := range cl.SendStreamingMessage(ctx, message("nope", map[string]any{})) {
		if !errors.Is(err, a2av1.ErrInvalidParams) {
			t.Errorf("stream of an unknown skill: %v, want ErrInvalidParams", err)
		}
		break
	}
}

func message(skill string, data map[string]any) *a2av1.SendMessageRequest {
	m := a2av1.NewMessage(a2av1.MessageRoleUser, a2av1.NewDataPart(data))
	m.Metadata = map[string]any{"skillId": skill}
	return &a2av1.SendMessageRequest{Message: m}
}

// The official a2a-go v2 client drives every task operation over both
// bindings the card advertises, against the same handlers.
func TestA2ABindings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th := mustHost(t, dir)
	for _, binding := range []a2av1.TransportProtocol{a2av1.TransportProtocolJSONRPC, a2av1.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cl := mustClient(ctx, t, th.URL, binding)

			// send
			res, err := cl.SendMessage(ctx, message("echo", map[string]any{"text": "hi " + string(binding)}))
			if err != nil {
				t.Fatalf("SendMessage: %v", err)
			}
			task, ok := res.(*a2av1.Task)
			if !ok || task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
				t.Fatalf("SendMessage = %+v", res)
			}
			if diff := cmp.Diff(a2av1.NewDataPart(map[string]any{"text": "hi " + string(binding)}).Content, task.Artifacts[0].Parts[0].Content); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}

			// get
			got, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: task.ID})
			if err != nil || got.ID != task.ID || got.Status.State != a2av1.TaskStateCompleted {
				t.Errorf("GetTask = %+v, %v", got, err)
			}
			_, err = cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: "no-such-task"})
			if !errors.Is(err, a2av1.ErrTaskNotFound) {
				t.Errorf("GetTask of an unknown task: %v, want ErrTaskNotFound", err)
			}

			// stream
			checkStream(ctx, t, cl)

			// list
			list, err := cl.ListTasks(ctx, &a2av1.ListTasksRequest{ContextID: task.ContextID})
			if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
				t.Errorf("ListTasks(context) = %+v, %v", list, err)
			}

			// cancel a running task
			req := message("spin", map[string]any{})
			req.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
			res, err = cl.SendMessage(ctx, req)
			if err != nil {
				t.Fatalf("SendMessage(spin): %v", err)
			}
			spin := res.(*a2av1.Task)
			canceled, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: spin.ID})
			if err != nil || canceled.Status.State != a2av1.TaskStateCanceled {
				t.Fatalf("CancelTask = %+v, %v", canceled, err)
			}
			_, err = cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: spin.ID})
			if !errors.Is(err, a2av1.ErrTaskNotCancelable) {
				t.Errorf("second CancelTask: %v, want ErrTaskNotCancelable", err)
			}

			// Without API keys there is nothing extended to protect: no
			// extended card (A2A v1.0 §13.3 requires authentication for it).
			if ext, err := cl.GetExtendedAgentCard(ctx, &a2av1.GetExtendedAgentCardRequest{}); !errors.Is(err, a2av1.ErrExtendedCardNotConfigured) {
				t.Errorf("GetExtendedAgentCard without keys = %+v, %v; want ErrExtendedCardNotConfigured", ext, err)
			}
		})
	}
}

// Errors of the HTTP+JSON binding carry the status of host/fault's table
// and a google.rpc.Status body with the A2A reason and skillhost's reason.
func TestRESTErrorShape(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th := mustHost(t, dir)
	tests := []struct {
		name, method, path, body string
		status                   int
		want                     []string
	}{
		{"unknown task", http.MethodGet, "/a2a/tasks/nope", "", 404, []string{`"status":"NOT_FOUND"`, `"reason":"TASK_NOT_FOUND"`, `"domain":"a2a-protocol.org"`, `"reason":"task_not_found"`}},
		{"unknown route", http.MethodGet, "/a2a/nothing/here/at/all", "", 404, []string{`"status":"UNIMPLEMENTED"`, `"reason":"METHOD_NOT_FOUND"`}},
		{"not an object", http.MethodPost, "/a2a/message:send", `[1]`, 400, []string{`"status":"INVALID_ARGUMENT"`, `"reason":"INVALID_PARAMS"`}},
		{"unknown tenant", http.MethodPost, "/a2a/nobody/message:send", `{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}`, 400, []string{`"reason":"unknown_tenant"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, tt.method, th.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b strings.Builder
			_, _ = io.Copy(&b, resp.Body)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, tt.status, b.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("body lacks %s: %s", w, b.String())
				}
			}
		})
	}
}

// a2a-go v0.3 clients: a message/stream refused before its stream starts
// arrives as one SSE event carrying the JSON-RPC error; a plugin's card
// sends them to that plugin's endpoint, which serves its skills only.
func TestV03Details(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	mustPlugin(t, dir, "solo", strings.NewReplacer("name: tools", "name: solo", "id: echo", "id: solo-echo", "  - {id: spin, function: loop, description: Never returns}\n", "").Replace(bindingsManifest))
	th := mustHost(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	hostCard, err := legacycard.DefaultResolver.Resolve(ctx, th.URL)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := legacyclient.NewFromCard(ctx, hostCard)
	if err != nil {
		t.Fatal(err)
	}
	msg := legacy.NewMessage(legacy.MessageRoleUser, legacy.DataPart{Data: map[string]any{"text": "x"}})
	msg.Metadata = map[string]any{"skillId": "nope"}
	var streamErr error
	for _, err := range cl.SendStreamingMessage(ctx, &legacy.MessageSendParams{Message: msg}) {
		streamErr = err
		break
	}
	if !errors.Is(streamErr, legacy.ErrInvalidParams) {
		t.Errorf("message/stream of an unknown skill: %v, want the JSON-RPC error -32602", streamErr)
	}
	for _, err := range cl.ResubscribeToTask(ctx, &legacy.TaskIDParams{ID: "no-such-task"}) {
		streamErr = err
		break
	}
	if !errors.Is(streamErr, legacy.ErrTaskNotFound) {
		t.Errorf("tasks/resubscribe of an unknown task: %v, want the JSON-RPC error -32001", streamErr)
	}

	// The plugin's card: its v0.3 url is its own endpoint.
	soloCard, err := legacycard.DefaultResolver.Resolve(ctx, th.URL+"/agents/solo")
	if err != nil {
		t.Fatal(err)
	}
	if want := th.URL + "/agents/solo/rpc"; soloCard.URL != want {
		t.Errorf("solo card url %s, want %s", soloCard.URL, want)
	}
	solo, err := legacyclient.NewFromCard(ctx, soloCard)
	if err != nil {
		t.Fatal(err)
	}
	noSkill := legacy.NewMessage(legacy.MessageRoleUser, legacy.DataPart{Data: map[string]any{"text": "only solo"}})
	res, err := solo.SendMessage(ctx, &legacy.MessageSendParams{Message: noSkill})
	if task, ok := res.(*legacy.Task); err != nil || !ok || task.Status.State != legacy.TaskStateCompleted {
		t.Fatalf("message/send without skillId on the solo endpoint = %+v, %v", res, err)
	}
	other := legacy.NewMessage(legacy.MessageRoleUser, legacy.DataPart{Data: map[string]any{"text": "x"}})
	other.Metadata = map[string]any{"skillId": "echo"} // tools' skill
	if _, err := solo.SendMessage(ctx, &legacy.MessageSendParams{Message: other}); !errors.Is(err, legacy.ErrInvalidParams) {
		t.Errorf("another plugin's skill on the solo endpoint: %v, want -32602", err)
	}
	// Only A2A methods are served there.
	r := th.call(t, "_cleveragents/session/create", map[string]any{})
	if r.Error != nil {
		t.Fatalf("session/create on /rpc: %+v", r.Error)
	}
	_, body, err := th.post(ctx, "/agents/solo/rpc", rpcBody("_cleveragents/session/create", map[string]any{}))
	if err != nil || !strings.Contains(string(body), "-32601") {
		t.Errorf("session/create on the solo endpoint: %s, %v; want -32601", body, err)
	}
}
