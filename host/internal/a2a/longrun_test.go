package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/a2a/rest"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// binding is what a long-running-task test does over one A2A binding.
type binding struct {
	send      func(t *testing.T, skill string, input map[string]any) *a2av1.Task // returnImmediately
	get       func(t *testing.T, id a2av1.TaskID) *a2av1.Task
	listed    func(t *testing.T, state a2av1.TaskState) []a2av1.TaskID
	subscribe func(t *testing.T, id a2av1.TaskID) jsonrpc.Stream // events decode as a2av1.StreamResponse
	cancel    func(t *testing.T, id a2av1.TaskID) *a2av1.Task
}

// restBinding runs the HTTP+JSON binding's routes through rest.Binding.
func restBinding(ctx context.Context, bind *rest.Binding) binding {
	call := func(t *testing.T, method, path string, q url.Values, body any, out any) {
		t.Helper()
		var b []byte
		if body != nil {
			b, _ = json.Marshal(body)
		}
		r := bind.Serve(ctx, rest.Request{Method: method, Path: path, Query: q, Body: b})
		if r.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
		}
		if err := json.Unmarshal(r.Body, out); err != nil {
			t.Fatalf("%s %s: %s: %v", method, path, r.Body, err)
		}
	}
	return binding{
		send: func(t *testing.T, skill string, input map[string]any) *a2av1.Task {
			req := skillMsg(skill, a2av1.NewDataPart(input))
			req.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
			var sr a2av1.StreamResponse
			call(t, http.MethodPost, "/message:send", nil, req, &sr)
			return sr.Event.(*a2av1.Task)
		},
		get: func(t *testing.T, id a2av1.TaskID) *a2av1.Task {
			var task a2av1.Task
			call(t, http.MethodGet, "/tasks/"+string(id), url.Values{}, nil, &task)
			return &task
		},
		listed: func(t *testing.T, state a2av1.TaskState) []a2av1.TaskID {
			var resp a2av1.ListTasksResponse
			call(t, http.MethodGet, "/tasks", url.Values{"status": {string(state)}}, nil, &resp)
			var ids []a2av1.TaskID
			for _, task := range resp.Tasks {
				ids = append(ids, task.ID)
			}
			return ids
		},
		subscribe: func(t *testing.T, id a2av1.TaskID) jsonrpc.Stream {
			r := bind.Serve(ctx, rest.Request{Method: http.MethodPost, Path: "/tasks/" + string(id) + ":subscribe", Query: url.Values{}})
			if r.Stream == nil {
				t.Fatalf("subscribe: %d %s", r.Status, r.Body)
			}
			return r.Stream
		},
		cancel: func(t *testing.T, id a2av1.TaskID) *a2av1.Task {
			var task a2av1.Task
			call(t, http.MethodPost, "/tasks/"+string(id)+":cancel", nil, map[string]any{}, &task)
			return &task
		},
	}
}

// rpcBinding runs the JSON-RPC methods through the engine.
func rpcBinding(ctx context.Context, eng *jsonrpc.Engine) binding {
	call := func(t *testing.T, method string, params any, out any) any {
		t.Helper()
		p, _ := json.Marshal(params)
		res, err := eng.Invoke(ctx, method, p)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if st, ok := res.(jsonrpc.Stream); ok {
			return st
		}
		b, _ := json.Marshal(res)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %s: %v", method, b, err)
		}
		return nil
	}
	return binding{
		send: func(t *testing.T, skill string, input map[string]any) *a2av1.Task {
			req := skillMsg(skill, a2av1.NewDataPart(input))
			req.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
			var sr a2av1.StreamResponse
			call(t, "SendMessage", req, &sr)
			return sr.Event.(*a2av1.Task)
		},
		get: func(t *testing.T, id a2av1.TaskID) *a2av1.Task {
			var task a2av1.Task
			call(t, "GetTask", a2av1.GetTaskRequest{ID: id}, &task)
			return &task
		},
		listed: func(t *testing.T, state a2av1.TaskState) []a2av1.TaskID {
			var resp a2av1.ListTasksResponse
			call(t, "ListTasks", a2av1.ListTasksRequest{Status: state}, &resp)
			var ids []a2av1.TaskID
			for _, task := range resp.Tasks {
				ids = append(ids, task.ID)
			}
			return ids
		},
		subscribe: func(t *testing.T, id a2av1.TaskID) jsonrpc.Stream {
			return call(t, "SubscribeToTask", a2av1.SubscribeToTaskRequest{ID: id}, nil).(jsonrpc.Stream)
		},
		cancel: func(t *testing.T, id a2av1.TaskID) *a2av1.Task {
			var task a2av1.Task
			call(t, "CancelTask", a2av1.CancelTaskRequest{ID: id}, &task)
			return &task
		},
	}
}

// streamResponse decodes one stream event of either binding.
func streamResponse(t *testing.T, v any) a2av1.Event {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var sr a2av1.StreamResponse
	if err := json.Unmarshal(b, &sr); err != nil {
		t.Fatalf("stream event %s: %v", b, err)
	}
	return sr.Event
}

// repeatsSnapshot reports whether ev is the status update of the move that
// snap already shows (same state and time, no message).
func repeatsSnapshot(ev a2av1.Event, snap *a2av1.Task) bool {
	u, ok := ev.(*a2av1.TaskStatusUpdateEvent)
	return ok && u.Status.Message == nil && u.Status.State == snap.Status.State &&
		u.Status.Timestamp != nil && snap.Status.Timestamp != nil && u.Status.Timestamp.Equal(*snap.Status.Timestamp)
}

// TestLongRunningTask: with returnImmediately, a skill that runs for a
// while and reports progress answers at once with its task in progress
// (submitted), and is working and visible while it runs — GetTask,
// ListTasks (status working), SubscribeToTask (its progress) — until
// CancelTask ends it, on both bindings.
func TestLongRunningTask(t *testing.T) {
	t.Parallel()
	h := startHost(t, mustProgressPluginDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	ctx = auth.With(ctx, auth.Local("test"))
	ctx = jsonrpc.WithTransport(ctx, jsonrpc.TransportInfo{Name: "http", Header: http.Header{}.Get})
	for name, b := range map[string]binding{"JSON-RPC": rpcBinding(ctx, h.eng), "HTTP+JSON": restBinding(ctx, rest.New(h.eng, quietLogger()))} {
		t.Run(name, func(t *testing.T) {
			if quick := b.send(t, "steps", map[string]any{}); quick.Status.State != a2av1.TaskStateSubmitted {
				t.Errorf("returnImmediately of a quick skill answered %s, want submitted (in progress, as A2A says)", quick.Status.State)
			}
			task := b.send(t, "slow", map[string]any{"steps": 1000, "ms": 20}) // 20 s, far longer than the test
			if task.Status.State != a2av1.TaskStateSubmitted {
				t.Fatalf("returnImmediately answered %s, want submitted", task.Status.State)
			}
			testutil.Eventually(t, 30*time.Second, "the task is working", func() bool {
				return b.get(t, task.ID).Status.State == a2av1.TaskStateWorking
			})
			if ids := b.listed(t, a2av1.TaskStateWorking); !slices.Contains(ids, task.ID) {
				t.Errorf("ListTasks status working = %v, want it to include %s", ids, task.ID)
			}
			sub := b.subscribe(t, task.ID)
			defer func() { _ = sub.(interface{ Close() error }).Close() }()
			first, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			snap, ok := streamResponse(t, first).(*a2av1.Task)
			if !ok || snap.Status.State != a2av1.TaskStateWorking {
				t.Fatalf("subscription's first event = %#v, want the working task", snap)
			}
			next, err := sub.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if repeatsSnapshot(streamResponse(t, next), snap) {
				// the move to working was published after the snapshot
				// was read: it may repeat (SubscribeToTask)
				if next, err = sub.Next(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if ev, ok := streamResponse(t, next).(*a2av1.TaskStatusUpdateEvent); !ok || ev.Status.State != a2av1.TaskStateWorking || ev.Status.Message == nil {
				t.Fatalf("subscription's next event = %#v, want a progress report", next)
			}
			if got := b.cancel(t, task.ID); got.Status.State != a2av1.TaskStateCanceled {
				t.Fatalf("CancelTask = %s, want canceled", got.Status.State)
			}
			var last a2av1.Event
			for {
				v, err := sub.Next(ctx)
				if err != nil {
					break
				}
				last = streamResponse(t, v)
			}
			if ev, ok := last.(*a2av1.TaskStatusUpdateEvent); !ok || ev.Status.State != a2av1.TaskStateCanceled {
				t.Errorf("subscription's last event = %s, want canceled", fmt.Sprint(last))
			}
		})
	}
}
