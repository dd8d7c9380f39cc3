package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func failingEngine(t *testing.T, err error, opts ...Option) *Engine {
	t.Helper()
	e := NewEngine(testLimits, opts...)
	e.Register("fail", func(context.Context, *Request) (any, error) { return nil, err })
	return e
}

func TestErrorData(t *testing.T) {
	t.Parallel()
	sessionFault := fault.New(fault.SessionNotFound, fault.ReasonSessionClosed, "session s9 is closed").With("session_id", "s9")
	tests := []struct {
		name      string
		err       error
		params    string
		transport string
		wantCode  int
		wantMsg   string
		wantData  map[string]any // request_id/timestamp "*" = present, any value
	}{
		{"envelope request id", fault.New(fault.Timeout, fault.ReasonTimeout, "took too long"), `{"request_id":"r1","session_id":"s1"}`, "t1", -32104, "took too long",
			map[string]any{"reason": "timeout", "request_id": "r1", "session_id": "s1", "timestamp": "*"}},
		{"transport request id", fault.New(fault.ResourceExhausted, fault.ReasonMemoryLimit, "memory cap 64 MiB hit"), `{}`, "t1", -32106, "memory cap 64 MiB hit",
			map[string]any{"reason": "memory_limit", "request_id": "t1", "timestamp": "*"}},
		{"generated request id", fault.New(fault.SkillFailed, fault.ReasonTrap, "unreachable"), `[]`, "", -32103, "unreachable",
			map[string]any{"reason": "trap", "request_id": "*", "timestamp": "*"}},
		{"session from fault data", sessionFault, `{"session_id":"other"}`, "", -32100, "session s9 is closed",
			map[string]any{"reason": "session_closed", "request_id": "*", "session_id": "s9", "timestamp": "*"}},
		{"default reason from kind", &fault.Error{Kind: fault.PlanNotFound}, `{}`, "", -32101, "Plan not found",
			map[string]any{"reason": "plan_not_found", "request_id": "*", "timestamp": "*"}},
		{"fault data merged", fault.New(fault.InvalidParams, fault.ReasonSchema, "bad").With("field", "text").With("request_id", "spoofed"), `{"request_id":"r2"}`, "", -32602, "bad",
			map[string]any{"reason": "schema", "request_id": "r2", "timestamp": "*", "field": "text"}},
		{"plain error hidden", errors.New("dial db: password=hunter2"), `{}`, "", -32603, "internal error",
			map[string]any{"reason": "internal", "request_id": "*", "timestamp": "*"}},
		{"wrapped fault found", errors.Join(errors.New("ctx"), fault.New(fault.Forbidden, "scope", "scope denied")), `{}`, "", -32105, "scope denied",
			map[string]any{"reason": "scope", "request_id": "*", "timestamp": "*"}},
		{"deadline", context.DeadlineExceeded, `{}`, "", -32104, "deadline exceeded",
			map[string]any{"reason": "timeout", "request_id": "*", "timestamp": "*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &testutil.LogBuffer{}
			e := failingEngine(t, tt.err, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
			ctx := WithTransport(t.Context(), TransportInfo{Name: "test", RequestID: tt.transport})
			reply := e.Handle(ctx, []byte(`{"jsonrpc":"2.0","method":"fail","id":1,"params":`+tt.params+`}`))
			r := mustResp(t, reply.Body)
			if r.Error == nil || r.Error.Code != tt.wantCode || r.Error.Message != tt.wantMsg {
				t.Fatalf("got %s; want code %d message %q", reply.Body, tt.wantCode, tt.wantMsg)
			}
			got := r.Error.Data
			for k, v := range tt.wantData {
				if v == "*" {
					if s, _ := got[k].(string); s == "" {
						t.Errorf("data.%s missing: %v", k, got)
					}
					got[k] = "*"
				}
			}
			if diff := cmp.Diff(tt.wantData, got); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if strings.Contains(string(reply.Body), "hunter2") {
				t.Errorf("internal error text leaked: %s", reply.Body)
			}
			if tt.wantCode == -32603 && !strings.Contains(logs.String(), "hunter2") {
				t.Errorf("hidden cause not logged: %q", logs.String())
			}
		})
	}
}

func TestA2AErrorData(t *testing.T) {
	t.Parallel()
	err := fault.New(fault.TaskNotFound, "task_not_found", "task t1 does not exist").With("task_id", "t1").With("attempt", 2)
	e := failingEngine(t, err)
	var got struct {
		Error struct {
			Code int              `json:"code"`
			Data []map[string]any `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(mustHandle(t, e, `{"jsonrpc":"2.0","method":"fail","id":1,"params":{"request_id":"r1","session_id":"s1"}}`), &got); err != nil {
		t.Fatal(err)
	}
	if got.Error.Code != -32001 || len(got.Error.Data) != 1 {
		t.Fatalf("got %+v", got.Error)
	}
	info := got.Error.Data[0]
	meta, _ := info["metadata"].(map[string]any)
	if ts, _ := meta["timestamp"].(string); ts == "" {
		t.Errorf("metadata.timestamp missing: %v", meta)
	}
	delete(meta, "timestamp")
	want := map[string]any{
		"@type": fault.ErrorInfoType, "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org",
		"metadata": map[string]any{"reason": "task_not_found", "request_id": "r1", "session_id": "s1", "task_id": "t1", "attempt": "2"},
	}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("ErrorInfo (-want +got):\n%s", diff)
	}
}

func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	logs := &testutil.LogBuffer{}
	e := NewEngine(testLimits, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	e.Register("boom", func(context.Context, *Request) (any, error) { panic("secret state") })
	e.Register("ok", func(context.Context, *Request) (any, error) { return "fine", nil })
	for range 3 {
		r := mustResp(t, mustHandle(t, e, `{"jsonrpc":"2.0","method":"boom","id":7}`))
		if r.Error == nil || r.Error.Code != -32603 || r.Error.Message != "internal error" || string(r.ID) != "7" {
			t.Fatalf("panic response: %+v", r)
		}
		if r := mustResp(t, mustHandle(t, e, `{"jsonrpc":"2.0","method":"ok","id":8}`)); string(r.Result) != `"fine"` {
			t.Fatalf("engine stopped serving after a panic: %+v", r)
		}
	}
	if l := logs.String(); !strings.Contains(l, "secret state") || !strings.Contains(l, "goroutine") {
		t.Errorf("panic not logged with stack: %q", l)
	}
}

type testStream struct {
	events []any
	closed atomic.Bool
}

func (s *testStream) Next(context.Context) (any, error) {
	if len(s.events) == 0 {
		return nil, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *testStream) Close() error { s.closed.Store(true); return nil }

func TestStreamResults(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var made []*testStream
	e := NewEngine(testLimits)
	e.Register("watch", func(context.Context, *Request) (any, error) {
		s := &testStream{events: []any{"a", "b"}}
		mu.Lock()
		made = append(made, s)
		mu.Unlock()
		return s, nil
	})

	reply := e.Handle(t.Context(), []byte(`{"jsonrpc":"2.0","method":"watch","id":"w1"}`))
	if !reply.Streaming() || reply.Body != nil {
		t.Fatalf("single streaming call: %+v", reply)
	}
	mu.Lock()
	first := made[0]
	mu.Unlock()
	if first.closed.Load() {
		t.Error("a stream to deliver was closed by Handle")
	}
	var events []string
	if err := reply.Pump(t.Context(), func(msg []byte) error { events = append(events, string(msg)); return nil }); err != nil {
		t.Fatalf("Pump: %v", err)
	}
	want := []string{`{"jsonrpc":"2.0","result":"a","id":"w1"}`, `{"jsonrpc":"2.0","result":"b","id":"w1"}`}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("pumped events (-want +got):\n%s", diff)
	}

	body := mustHandle(t, e, `[{"jsonrpc":"2.0","method":"watch","id":1},{"jsonrpc":"2.0","method":"watch"}]`)
	var got []wireResp
	if err := json.Unmarshal(body, &got); err != nil || len(got) != 1 {
		t.Fatalf("batch with streams: %v %s", err, body)
	}
	if got[0].Error == nil || got[0].Error.Code != -32600 || got[0].Error.Data["reason"] != fault.ReasonStreamBatch {
		t.Errorf("stream in batch: %s", body)
	}
	if r := e.Handle(t.Context(), []byte(`{"jsonrpc":"2.0","method":"watch"}`)); r.Body != nil || r.Streaming() {
		t.Errorf("stream for a notification answered: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(made) != 4 {
		t.Fatalf("made %d streams, want 4", len(made))
	}
	if !made[0].closed.Load() {
		t.Error("delivered stream not closed once pumped")
	}
	for i, s := range made[1:] {
		if !s.closed.Load() {
			t.Errorf("refused stream %d not closed", i+1)
		}
	}
}

func TestEncodeResult(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(`{"jsonrpc":"2.0","result":{"a":1},"id":1.0}`, string(EncodeResult(json.RawMessage(`1.0`), map[string]int{"a": 1}))); diff != "" {
		t.Errorf("EncodeResult (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(`{"jsonrpc":"2.0","result":null,"id":null}`, string(EncodeResult(nil, nil))); diff != "" {
		t.Errorf("EncodeResult nil (-want +got):\n%s", diff)
	}
	r := mustResp(t, EncodeResult(json.RawMessage(`"x"`), make(chan int)))
	if r.Error == nil || r.Error.Code != -32603 || string(r.ID) != `"x"` || r.Error.Message != "internal error" {
		t.Errorf("unencodable result: %+v", r)
	}
	r = mustResp(t, EncodeError(t.Context(), nil, Envelope{}, fault.New(fault.Timeout, "", "slow").With("bad", make(chan int))))
	if r.Error == nil || r.Error.Code != -32104 || r.Error.Data["reason"] != "timeout" {
		t.Errorf("unencodable error data: %+v", r)
	}
}
