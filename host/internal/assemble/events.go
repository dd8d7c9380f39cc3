package assemble

import (
	"context"
	"fmt"

	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// provisionEvents opens the event stream that plan progress and agent
// notifications go to (and GET /events reads).
func (h *Root) provisionEvents(ctx context.Context) error {
	bus, err := events.Open(ctx, h.Store, h.cfg.Events)
	if err != nil {
		return fmt.Errorf("events: %w", err)
	}
	h.events = bus
	return nil
}

// eventSource serves GET /events from the bus; the session must be active.
func (h *Root) eventSource() httpx.EventSource {
	src := events.Source{Bus: h.events, Sessions: h.Store}
	return func(ctx context.Context, q httpx.EventQuery) (httpx.EventStream, error) {
		st, err := src.Open(ctx, events.Query(q))
		if err != nil {
			return nil, err
		}
		return st, nil
	}
}
