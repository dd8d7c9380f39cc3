package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

// scripted is a stream whose Next runs each step in turn, then blocks until
// ctx ends; it records that it was closed, and whether it was closed while
// Next was running.
type scripted struct {
	steps   []func() (any, error)
	inNext  atomic.Bool
	closed  atomic.Bool
	badShut atomic.Bool
}

func (s *scripted) Next(ctx context.Context) (any, error) {
	s.inNext.Store(true)
	defer s.inNext.Store(false)
	if len(s.steps) == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	step := s.steps[0]
	s.steps = s.steps[1:]
	return step()
}

func (s *scripted) Close() error {
	if s.inNext.Load() {
		s.badShut.Store(true)
	}
	s.closed.Store(true)
	return nil
}

func value(v any) func() (any, error) { return func() (any, error) { return v, nil } }

// pumpEngine serves "plain" and "a2a" (ErrorInfo style), each streaming st.
func pumpEngine(st *scripted) *Engine {
	e := NewEngine(testLimits)
	h := func(context.Context, *Request) (any, error) { return st, nil }
	e.Register("plain", h, Streaming())
	e.RegisterA2A("a2a", h, Streaming())
	return e
}

type pumped struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	} `json:"error"`
}

// mustPump handles body, pumps the reply and returns the decoded events.
func mustPump(t *testing.T, e *Engine, body string, opts ...PumpOption) ([]pumped, error) {
	t.Helper()
	reply := e.Handle(t.Context(), []byte(body))
	if !reply.Streaming() {
		t.Fatalf("%s: not a stream: %s", body, reply.Body)
	}
	var out []pumped
	err := reply.Pump(t.Context(), func(msg []byte) error {
		var p pumped
		if err := json.Unmarshal(msg, &p); err != nil {
			t.Fatalf("event %s: %v", msg, err)
		}
		out = append(out, p)
		return nil
	}, opts...)
	return out, err
}

// TestPumpErrorsInTheMethodsStyle: a stream error is encoded exactly as the
// same method's error without streaming: an object for _cleveragents-style
// methods, a google.rpc.ErrorInfo array for A2A v1.0 methods.
func TestPumpErrorsInTheMethodsStyle(t *testing.T) {
	t.Parallel()
	fail := func() (any, error) {
		return nil, fault.New(fault.Timeout, fault.ReasonTimeout, "too slow")
	}
	tests := []struct {
		method   string
		wantData string // first byte of data
	}{
		{"plain", "{"},
		{"a2a", "["},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			t.Parallel()
			st := &scripted{steps: []func() (any, error){value(1), fail}}
			got, err := mustPump(t, pumpEngine(st), `{"jsonrpc":"2.0","id":"s","method":"`+tt.method+`"}`)
			if err != nil {
				t.Fatalf("Pump: %v", err)
			}
			if len(got) != 2 || string(got[0].Result) != "1" || got[1].Error == nil || got[1].ID != "s" {
				t.Fatalf("events %+v, want a result then an error, both with id s", got)
			}
			if got[1].Error.Code != -32104 || string(got[1].Error.Data[:1]) != tt.wantData {
				t.Errorf("error %d data %s, want -32104 with data starting %q", got[1].Error.Code, got[1].Error.Data, tt.wantData)
			}
			// The same error without streaming has the same data shape.
			e := NewEngine(testLimits)
			e.RegisterA2A("a2a", func(context.Context, *Request) (any, error) { return fail() })
			e.Register("plain", func(context.Context, *Request) (any, error) { return fail() })
			var direct pumped
			if err := json.Unmarshal(e.Handle(t.Context(), []byte(`{"jsonrpc":"2.0","id":"s","method":"`+tt.method+`"}`)).Body, &direct); err != nil {
				t.Fatal(err)
			}
			if direct.Error == nil || direct.Error.Data[0] != got[1].Error.Data[0] {
				t.Errorf("streamed data %s, unstreamed %+v: different shapes", got[1].Error.Data, direct.Error)
			}
			if !st.closed.Load() || st.badShut.Load() {
				t.Errorf("closed %v, closed during Next %v", st.closed.Load(), st.badShut.Load())
			}
		})
	}
}

// TestPumpRecoversPanics: a stream that panics ends with -32603; the
// process goes on and the stream is closed.
func TestPumpRecoversPanics(t *testing.T) {
	t.Parallel()
	st := &scripted{steps: []func() (any, error){value("a"), func() (any, error) { panic("boom") }}}
	got, err := mustPump(t, pumpEngine(st), `{"jsonrpc":"2.0","id":"p","method":"a2a"}`)
	if err != nil {
		t.Fatalf("Pump: %v", err)
	}
	if len(got) != 2 || got[1].Error == nil || got[1].Error.Code != -32603 {
		t.Fatalf("events %+v, want a result then -32603", got)
	}
	if !st.closed.Load() {
		t.Error("stream not closed after the panic")
	}
}

// TestPumpEndsWithItsContext: a stream waiting for an event ends when the
// transport's context ends (the client went away), and is closed only once
// Next has returned.
func TestPumpEndsWithItsContext(t *testing.T) {
	t.Parallel()
	st := &scripted{steps: []func() (any, error){value("first")}}
	reply := pumpEngine(st).Handle(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"plain"}`))
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- reply.Pump(ctx, func(msg []byte) error {
			if !st.closed.Load() && string(msg) == `{"jsonrpc":"2.0","result":"first","id":1}` {
				close(first)
			}
			return nil
		})
	}()
	<-first
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Pump did not return after its context ended")
	}
	if !st.closed.Load() || st.badShut.Load() {
		t.Errorf("closed %v, closed during Next %v", st.closed.Load(), st.badShut.Load())
	}
}

// TestPumpStopsOnSendError: a transport that cannot write ends the pump with
// its error, and the stream is closed.
func TestPumpStopsOnSendError(t *testing.T) {
	t.Parallel()
	st := &scripted{steps: []func() (any, error){value(1), value(2), value(3)}}
	reply := pumpEngine(st).Handle(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"plain"}`))
	gone := errors.New("client gone")
	sent := 0
	err := reply.Pump(t.Context(), func([]byte) error { sent++; return gone })
	if !errors.Is(err, gone) || sent != 1 {
		t.Errorf("Pump = %v after %d sends, want the send error after 1", err, sent)
	}
	if !st.closed.Load() || st.badShut.Load() {
		t.Errorf("closed %v, closed during Next %v", st.closed.Load(), st.badShut.Load())
	}
}

// TestPumpKeepAlive: while no event comes, the keep-alive ping runs; its
// error ends the pump.
func TestPumpKeepAlive(t *testing.T) {
	t.Parallel()
	st := &scripted{}
	reply := pumpEngine(st).Handle(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"plain"}`))
	pings := 0
	stop := errors.New("enough pings")
	err := reply.Pump(t.Context(), func([]byte) error { return nil }, KeepAlive(time.Millisecond, func() error {
		if pings++; pings == 3 {
			return stop
		}
		return nil
	}))
	if diff := cmp.Diff(3, pings); diff != "" || !errors.Is(err, stop) {
		t.Errorf("pings (-want +got):\n%s; Pump = %v", diff, err)
	}
}
