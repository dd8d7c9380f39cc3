package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/skillhost/skillhost/host/internal/a2a/rest"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// TestTCKFindings: what the official A2A TCK found accepted that the proto
// refuses: a message without messageId, an explicit pageSize 0, a negative
// historyLength (ListTasks, GetTask, SendMessage). Each is -32602; an
// absent pageSize is still the default.
func TestTCKFindings(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	res, e := rpc(t, h.URL, "SendMessage", sendParams("echo", `{"a":1}`), nil)
	if e != nil {
		t.Fatal(e)
	}
	var sent struct{ Task struct{ ID string } }
	if err := json.Unmarshal(res, &sent); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, params string
		code                 int // 0: success
	}{
		{"message without messageId", "SendMessage", `{"message":{"role":"ROLE_USER","parts":[{"data":{}}],"metadata":{"skillId":"echo"}}}`, -32602},
		{"v0.3 message without messageId", "message/send", `{"message":{"kind":"message","role":"user","parts":[{"kind":"data","data":{}}],"metadata":{"skillId":"echo"}}}`, -32602},
		{"pageSize 0", "ListTasks", `{"pageSize":0}`, -32602},
		{"v0.3 pageSize 0", "tasks/list", `{"pageSize":0}`, -32602},
		{"pageSize absent", "ListTasks", `{}`, 0},
		{"negative historyLength on ListTasks", "ListTasks", `{"historyLength":-1}`, -32602},
		{"negative historyLength on GetTask", "GetTask", fmt.Sprintf(`{"id":%q,"historyLength":-1}`, sent.Task.ID), -32602},
		{"historyLength 0 on GetTask", "GetTask", fmt.Sprintf(`{"id":%q,"historyLength":0}`, sent.Task.ID), 0},
		{"negative historyLength on SendMessage", "SendMessage",
			`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{}}],"metadata":{"skillId":"echo"}},"configuration":{"historyLength":-2}}`, -32602},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, e := rpc(t, h.URL, tt.method, tt.params, nil)
			got := 0
			if e != nil {
				got = e.Code
			}
			if got != tt.code {
				t.Errorf("%s %s: code %d (%v), want %d", tt.method, tt.params, got, e, tt.code)
			}
		})
	}
}

// TestSubscribeErrorIsAnEvent: SubscribeToTask of an unknown task answers
// its error as the stream's one event, as a2a-go's server does: over
// JSON-RPC (the engine marks the reply an error event, which the HTTP
// transport sends as Server-Sent Events) and over HTTP+JSON (a stream whose
// one event is the google.rpc.Status body).
func TestSubscribeErrorIsAnEvent(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	ctx := auth.With(context.Background(), auth.Local("test"))
	ctx = jsonrpc.WithTransport(ctx, jsonrpc.TransportInfo{Name: "http", Header: http.Header{}.Get})
	reply := h.eng.Handle(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"no-such-task"}}`))
	if !reply.ErrorEvent || reply.Err == nil || reply.Err.Kind.Code() != -32001 {
		t.Errorf("JSON-RPC SubscribeToTask of an unknown task: error event %v, err %v; want a -32001 error event", reply.ErrorEvent, reply.Err)
	}
	reply.Done()

	bind := rest.New(h.eng, quietLogger())
	r := bind.Serve(ctx, rest.Request{Method: http.MethodPost, Path: "/tasks/no-such-task:subscribe", Query: url.Values{}})
	if r.Stream == nil || r.Status != http.StatusOK {
		t.Fatalf("REST subscribe of an unknown task: status %d, stream %v, body %s; want 200 and a stream", r.Status, r.Stream != nil, r.Body)
	}
	ev, err := r.Stream.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if err := json.Unmarshal(ev.(json.RawMessage), &body); err != nil || body.Error.Code != http.StatusNotFound || body.Error.Status != "NOT_FOUND" {
		t.Errorf("REST subscribe error event = %s (%v), want a 404 NOT_FOUND status body", ev, err)
	}
	if _, err := r.Stream.Next(ctx); err != io.EOF {
		t.Errorf("after the error event: %v, want io.EOF", err)
	}
}
