package httpx

import (
	"bufio"
	"context"
	"runtime/debug"
	"time"

	"github.com/gofiber/fiber/v2"
)

// EventQuery is what a GET /events subscriber asks for.
type EventQuery struct {
	SessionID   string // ?session_id= ("" = every event)
	PlanID      string // ?plan_id=
	LastEventID string // the Last-Event-ID header, else ?last_event_id=
}

// EventStream is an open subscription: Next returns one complete
// Server-Sent Events frame ("id: …\nevent: …\ndata: …\n\n").
type EventStream interface {
	Next(ctx context.Context) ([]byte, error)
	Close() error
}

// EventSource opens subscriptions for GET /events. Errors are *fault.Error
// values, answered with their HTTP status (fault's table) and a JSON-RPC
// error body.
type EventSource interface {
	OpenEvents(ctx context.Context, q EventQuery) (EventStream, error)
}

// subscribe serves GET /events: the event stream as Server-Sent Events,
// from the event after Last-Event-ID (or new events only), with keep-alive
// comments while idle, until the client goes away or Shutdown starts. A
// first comment line tells the client the subscription is open.
func (s *Server) subscribe(c *fiber.Ctx) error {
	q := EventQuery{SessionID: c.Query("session_id"), PlanID: c.Query("plan_id"), LastEventID: c.Get("Last-Event-ID")}
	if q.LastEventID == "" {
		q.LastEventID = c.Query("last_event_id")
	}
	ctx, done := s.requestContext(c)
	st, err := s.cfg.Events.OpenEvents(ctx, q)
	if err != nil {
		done()
		return s.sendError(c, err)
	}
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Status(fiber.StatusOK)
	ctx, cancel := context.WithCancel(ctx)
	stopOnShutdown := context.AfterFunc(s.streams, cancel)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer done()
		defer stopOnShutdown()
		defer cancel()
		defer func() { _ = st.Close() }()
		defer func() { // a body writer runs after Fiber's recover middleware
			if p := recover(); p != nil {
				s.cfg.Logger.Error("GET /events: panic", "panic", p, "stack", string(debug.Stack()))
			}
		}()
		s.pumpEvents(ctx, w, st)
	})
	return nil
}

type frame struct {
	b   []byte
	err error
}

// pumpEvents writes st's frames to w until st ends, ctx ends or a write
// fails.
func (s *Server) pumpEvents(ctx context.Context, w *bufio.Writer, st EventStream) {
	write := func(b []byte) bool {
		if _, err := w.Write(b); err != nil {
			return false
		}
		return w.Flush() == nil
	}
	if !write([]byte(": subscribed\n\n")) {
		return
	}
	frames := make(chan frame)
	go func() {
		for {
			b, err := st.Next(ctx)
			select {
			case frames <- frame{b, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	tick := time.NewTicker(s.cfg.KeepAlive)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !write([]byte(": keep-alive\n\n")) {
				return
			}
		case f := <-frames:
			if f.err != nil || !write(f.b) {
				return
			}
			tick.Reset(s.cfg.KeepAlive)
		}
	}
}
