package host

import (
	"context"
	"fmt"

	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/agents"
	"github.com/skillhost/skillhost/host/internal/plan"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// setupPlans opens the plan store and work queue, registers the plan
// methods and runs the step workers as background work: Close ends h.bg and
// waits for h.wg, so running steps are interrupted and their jobs handed back
// (to another host, or to the next start) before the registry and the store
// close.
func (h *Host) setupPlans(ctx context.Context) error {
	hooks := plan.NewWebhooks(plan.WebhookConfig{
		Delivery: h.delivery, Secret: h.cfg.Plans.WebhookSecret, Net: h.parts.Net, Attempts: h.cfg.Plans.WebhookAttempts,
	})
	steps := agents.StepExecutor{Local: plan.NewLocalExecutor(h.registry), Router: h.parts.Router, Provenance: h.signer != nil}
	m, err := plan.Open(ctx, plan.Deps{Store: h.store, Skills: h.registry, Executor: steps, Sessions: h.store, Events: h.events, Webhooks: hooks, Logger: h.log,
		Provenance: provenance.NewSigner(h.signer, a2a.DefaultAgentName),
		Snapshot:   h.registry.Snapshot, Principals: h.authn.Keys().PrincipalOf},
		plan.Config{
			Replicas:           h.cfg.Store.Replicas,
			MaxSteps:           h.cfg.Plans.MaxSteps,
			MaxDefinitionBytes: int(h.cfg.Plans.MaxDefinition),
			MaxRecordBytes:     int(h.cfg.Plans.MaxRecord),
			Workers:            h.cfg.Plans.Workers,
			MaxDeliver:         h.cfg.Plans.MaxDeliver,
			MaxCrashes:         h.cfg.Plans.MaxCrashes,
			AckWait:            h.cfg.Plans.AckWait,
			Retention:          h.cfg.Plans.Retention,
			MaxBucketBytes:     int64(h.cfg.Plans.MaxBucket),
			MaxPlanTimeout:     h.cfg.Plans.MaxTimeout,
			MaxPerKey:          h.cfg.Plans.MaxPerKey,
			MaxBytesPerKey:     int64(h.cfg.Plans.MaxBytesPerKey),
			Reserve:            int64(h.cfg.Plans.Reserve),
		})
	if err != nil {
		return fmt.Errorf("plans: %w", err)
	}
	m.Register(h.engine, nil)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if err := m.Run(h.bg); err != nil {
			h.log.Error("plan runner stopped", "err", err)
		}
	}()
	return nil
}
