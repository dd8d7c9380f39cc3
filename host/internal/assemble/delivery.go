package assemble

import (
	"context"

	"github.com/skillhost/skillhost/host/internal/a2a/push"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/plan"
)

// provisionDelivery starts the outbound delivery service that push
// notifications and plan webhooks share (delivery.*): http_fetch's dial
// guard, shares per key and per destination, retries on a timer. Close
// stops it after push and plans: running attempts are interrupted,
// webhooks go back to their stream.
func (h *Root) provisionDelivery(context.Context) error {
	guard := h.Net // net.allow_private; each request bounds its own attempt
	guard.Timeout = max(guard.Timeout, h.cfg.A2A.Push.Timeout)
	observer := metrics.NewDeliveries(h.metrics.Registry(), push.DeliveryKind, plan.DeliveryKind)
	h.delivery = delivery.New(delivery.Config{
		Delivery:    h.cfg.Delivery,
		Client:      guard.Client(),
		KindPending: map[string]int{push.DeliveryKind: h.cfg.A2A.Push.MaxPending},
		Observer:    observer,
		Logger:      h.log,
	})
	observer.WatchPending(h.delivery.Pending)
	h.background("delivery", h.delivery.Run)
	return nil
}
