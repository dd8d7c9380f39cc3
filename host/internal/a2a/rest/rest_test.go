package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/rest"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// echoBinding is the binding over a real engine whose v1.0 A2A methods
// answer {"method": …, "params": …}: what a route turned into.
func echoBinding(t *testing.T) *rest.Binding {
	t.Helper()
	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 8, BatchConcurrency: 2, MaxBatchResponseBytes: 1 << 20})
	for _, m := range []string{"SendMessage", "GetTask", "ListTasks", "CancelTask", "GetExtendedAgentCard",
		"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"} {
		eng.RegisterA2A(m, func(_ context.Context, req *jsonrpc.Request) (any, error) {
			if m == "CancelTask" && string(req.Params) == `{"id":"gone"}` {
				return nil, fault.New(fault.TaskNotFound, fault.ReasonTaskNotFound, "no task gone")
			}
			return map[string]any{"method": m, "params": req.Params}, nil
		})
	}
	return rest.New(eng, nil)
}

// Each route runs the v1.0 method it stands for, with the path's tenant and
// task id in its params (winning over the body's), and query parameters
// typed as the method's params.
func TestRoutes(t *testing.T) {
	t.Parallel()
	b := echoBinding(t)
	for _, tc := range []struct {
		name, method, path, query, body string
		want                            string // the echoed call
	}{
		{"send", http.MethodPost, "/message:send", "", `{"message":{"messageId":"m"}}`,
			`{"method":"SendMessage","params":{"message":{"messageId":"m"}}}`},
		{"send with tenant", http.MethodPost, "/echo/message:send", "", `{"tenant":"other","message":{}}`,
			`{"method":"SendMessage","params":{"tenant":"echo","message":{}}}`},
		{"get", http.MethodGet, "/tasks/t1", "historyLength=3", ``,
			`{"method":"GetTask","params":{"id":"t1","historyLength":3}}`},
		{"list", http.MethodGet, "/echo/tasks", "pageSize=2&status=TASK_STATE_WORKING&lastUpdatedAfter=2026-01-01T00:00:00Z&includeArtifacts=true", ``,
			`{"method":"ListTasks","params":{"tenant":"echo","pageSize":2,"status":"TASK_STATE_WORKING","statusTimestampAfter":"2026-01-01T00:00:00Z","includeArtifacts":true}}`},
		{"cancel", http.MethodPost, "/tasks/t1:cancel", "", ``, `{"method":"CancelTask","params":{"id":"t1"}}`},
		{"card", http.MethodGet, "/extendedAgentCard", "", ``, `{"method":"GetExtendedAgentCard","params":{}}`},
		{"push create", http.MethodPost, "/tasks/t1/pushNotificationConfigs", "", `{"taskId":"x","url":"https://h.example"}`,
			`{"method":"CreateTaskPushNotificationConfig","params":{"taskId":"t1","url":"https://h.example"}}`},
		{"push list", http.MethodGet, "/tasks/t1/pushNotificationConfigs", "pageSize=5", ``,
			`{"method":"ListTaskPushNotificationConfigs","params":{"taskId":"t1","pageSize":5}}`},
		{"push get", http.MethodGet, "/tasks/t1/pushNotificationConfigs/c1", "", ``,
			`{"method":"GetTaskPushNotificationConfig","params":{"taskId":"t1","id":"c1"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, _ := url.ParseQuery(tc.query)
			r := b.Serve(context.Background(), rest.Request{Method: tc.method, Path: tc.path, Query: q, Body: []byte(tc.body)})
			if r.Status != http.StatusOK || r.Err != nil {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if diff := cmp.Diff(decode(t, tc.want), decode(t, string(r.Body))); diff != "" {
				t.Errorf("call (-want +got):\n%s", diff)
			}
		})
	}
}

// A delete answers {} (not null); an error is a google.rpc.Status body with
// the HTTP status of host/fault's table.
func TestRepliesAndRefusals(t *testing.T) {
	t.Parallel()
	b := echoBinding(t)
	for _, tc := range []struct {
		name, method, path, query, body string
		status                          int
		want                            string // body, or the error's reason
	}{
		{"delete answers an empty object", http.MethodDelete, "/tasks/t1/pushNotificationConfigs/c1", "", ``, http.StatusOK, `{}`},
		{"unknown route", http.MethodGet, "/nothing/here/at/all", "", ``, http.StatusNotFound, fault.ReasonUnknownMethod},
		{"wrong verb", http.MethodPut, "/message:send", "", `{}`, http.StatusNotFound, fault.ReasonUnknownMethod},
		{"query not an integer", http.MethodGet, "/tasks/t1", "historyLength=many", ``, http.StatusBadRequest, fault.ReasonInvalidParams},
		{"body not an object", http.MethodPost, "/message:send", "", `[1]`, http.StatusBadRequest, fault.ReasonInvalidParams},
		{"method's error", http.MethodPost, "/tasks/gone:cancel", "", ``, http.StatusNotFound, fault.ReasonTaskNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, _ := url.ParseQuery(tc.query)
			r := b.Serve(context.Background(), rest.Request{Method: tc.method, Path: tc.path, Query: q, Body: []byte(tc.body)})
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.status == http.StatusOK {
				if string(r.Body) != tc.want {
					t.Errorf("body %s, want %s", r.Body, tc.want)
				}
				return
			}
			var st struct {
				Error struct {
					Code    int `json:"code"`
					Details []struct {
						Metadata map[string]string `json:"metadata"`
					} `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal(r.Body, &st); err != nil || st.Error.Code != tc.status || len(st.Error.Details) != 1 {
				t.Fatalf("not a google.rpc.Status with code %d: %s (%v)", tc.status, r.Body, err)
			}
			if got := st.Error.Details[0].Metadata["reason"]; got != tc.want || r.Err == nil || r.Err.Reason != tc.want {
				t.Errorf("reason %q (Err %v), want %q: %s", got, r.Err, tc.want, r.Body)
			}
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}
