package assemble

import (
	"context"
	"fmt"

	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/plan"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// provisionPlans opens the plan store and work queue, registers the plan
// methods and runs the step workers as background work: Close stops them
// first, so running steps are interrupted and their jobs handed back (to
// another host, or to the next start) before the registry and the store
// close.
func (h *Root) provisionPlans(ctx context.Context) error {
	hooks := plan.NewWebhooks(plan.WebhookConfig{Delivery: h.delivery, Plans: h.cfg.Plans, Net: h.Net})
	steps := agents.StepExecutor{Local: plan.NewLocalExecutor(h.Registry), Router: h.Router, Provenance: h.signer != nil}
	m, err := plan.Open(ctx, plan.Deps{Store: h.Store, Skills: h.Registry, Executor: steps, Sessions: h.Store, Events: h.events, Webhooks: hooks, Logger: h.log,
		Provenance: provenance.NewSigner(h.signer, agentcard.DefaultAgentName),
		Snapshot:   h.Registry.Snapshot, Principals: h.keys.PrincipalOf},
		h.cfg.Plans)
	if err != nil {
		return fmt.Errorf("plans: %w", err)
	}
	m.Register(h.engine, nil)
	h.background("plan runner", func(ctx context.Context) {
		if err := m.Run(ctx); err != nil {
			h.log.Error("plan runner stopped", "err", err)
		}
	})
	return nil
}
