package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// Stream is a result delivered as a sequence of events, each sent as a
// JSON-RPC response with the request's id. Next returns io.EOF after the
// last event and must return when ctx ends. A Stream that also implements
// io.Closer is closed when the transport is done with it, including when it
// is refused (inside a batch or for a notification).
type Stream interface {
	Next(ctx context.Context) (any, error)
}

// streamReply is a single request's streaming result, with what its events
// need to be encoded in the method's own style.
type streamReply struct {
	eng *Engine
	req *Request
	src Stream
}

// Streaming reports whether the reply's result is a stream, which the
// transport delivers with Pump instead of sending Body.
func (r Reply) Streaming() bool { return r.stream != nil }

// PumpOption configures Pump.
type PumpOption func(*pumpConfig)

type pumpConfig struct {
	every time.Duration
	ping  func() error
}

// KeepAlive makes Pump call ping whenever no event was sent for every (an
// SSE comment keeps proxies from closing an idle stream); a ping error ends
// the pump like a send error. Optional. Default: no pings.
func KeepAlive(every time.Duration, ping func() error) PumpOption {
	return func(c *pumpConfig) { c.every, c.ping = every, ping }
}

// event is one outcome of Stream.Next.
type event struct {
	value any
	err   error
}

// Pump delivers a streaming reply; it is the one stream pump of every
// transport. It calls send with one encoded JSON-RPC response per event (the
// request's id) until the stream ends (io.EOF); an error from the stream is
// sent as one error response in the method's own style (an A2A v1.0 method's
// data stays a google.rpc.ErrorInfo array) and ends it. A panic in the stream
// (or in its Close) is recovered, logged with its stack and, from Next,
// answered with -32603. The stream is read with ctx (a transport cancels it when its client goes away or it
// shuts down) and closed before Pump returns. Pump returns the first error
// of send or of a keep-alive ping (the client is gone), else nil. On a reply
// that is not streaming it does nothing.
func (r Reply) Pump(ctx context.Context, send func(msg []byte) error, opts ...PumpOption) error {
	st := r.stream
	if st == nil {
		return nil
	}
	return st.pump(ctx, func(ev event) []byte {
		if ev.err != nil {
			return st.eng.requestError(ctx, st.req, ev.err).Body
		}
		return st.eng.result(ctx, st.req, ev.value)
	}, send, opts...)
}

// PumpRaw delivers src, a Stream whose events are already encoded
// ([]byte or json.RawMessage, e.g. the A2A HTTP+JSON binding's events), with
// Pump's guarantees (keep-alives, panic recovery, Close). An error from src
// ends the stream without an event: such a stream encodes its own errors as
// events before ending. name labels log lines.
func (e *Engine) PumpRaw(ctx context.Context, name string, src Stream, send func(msg []byte) error, opts ...PumpOption) error {
	st := &streamReply{eng: e, req: &Request{Method: name}, src: src}
	return st.pump(ctx, func(ev event) []byte {
		if ev.err != nil {
			e.log.WarnContext(ctx, "jsonrpc: raw stream failed", "stream", name, "err", ev.err)
			return nil
		}
		switch b := ev.value.(type) {
		case []byte:
			return b
		case json.RawMessage:
			return b
		}
		e.log.ErrorContext(ctx, "jsonrpc: raw stream event is not bytes", "stream", name, "type", fmt.Sprintf("%T", ev.value))
		return nil
	}, send, opts...)
}

// pump runs the stream, sending encode(event) for each event (nil: end).
func (st *streamReply) pump(ctx context.Context, encode func(event) []byte, send func(msg []byte) error, opts ...PumpOption) error {
	var cfg pumpConfig
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(ctx)
	events := make(chan event)
	go st.produce(ctx, events)
	defer func() {
		cancel()
		for range events { // until the producer is out of Next: the stream may be closed
		}
		st.close(ctx)
	}()

	var tick <-chan time.Time
	if cfg.ping != nil && cfg.every > 0 {
		t := time.NewTicker(cfg.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-tick:
			if err := cfg.ping(); err != nil {
				return err
			}
		case ev, ok := <-events:
			if !ok || errors.Is(ev.err, io.EOF) { // ended (ctx done) or finished
				return nil
			}
			msg := encode(ev)
			if msg == nil {
				return nil
			}
			if err := send(msg); err != nil {
				return err
			}
			if ev.err != nil {
				return nil
			}
		}
	}
}

// produce reads the stream until it ends, fails or ctx ends, handing each
// outcome to events, which it closes; a panic becomes an internal error
// event.
func (st *streamReply) produce(ctx context.Context, events chan<- event) {
	defer close(events)
	for {
		ev := st.next(ctx)
		select {
		case events <- ev:
		case <-ctx.Done():
			return
		}
		if ev.err != nil {
			return
		}
	}
}

func (st *streamReply) next(ctx context.Context) (ev event) {
	defer func() {
		if p := recover(); p != nil {
			st.eng.log.ErrorContext(ctx, "jsonrpc: stream panicked", "method", st.req.Method,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			ev = event{err: fault.New(fault.Internal, fault.ReasonInternal, "internal error")}
		}
	}()
	v, err := st.src.Next(ctx)
	return event{value: v, err: err}
}

// close closes the stream when it is an io.Closer; a panic in Close is
// logged, never propagated.
func (st *streamReply) close(ctx context.Context) {
	c, ok := st.src.(io.Closer)
	if !ok {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			st.eng.log.ErrorContext(ctx, "jsonrpc: closing stream panicked", "method", st.req.Method,
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
		}
	}()
	if err := c.Close(); err != nil {
		st.eng.log.WarnContext(ctx, "jsonrpc: closing stream", "method", st.req.Method, "err", err)
	}
}
