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

// eventSource serves GET /events from the bus (events.Source: the session
// must be active) as the HTTP transport's EventSource.
type eventSource struct{ src events.Source }

// OpenEvents implements httpx.EventSource.
func (e eventSource) OpenEvents(ctx context.Context, q httpx.EventQuery) (httpx.EventStream, error) {
	st, err := e.src.Open(ctx, events.Query(q))
	if err != nil {
		return nil, err
	}
	return st, nil
}
