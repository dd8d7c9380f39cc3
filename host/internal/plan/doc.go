// Package plan runs plans: named sequences of skill steps that execute
// asynchronously, report progress and survive a host restart.
//
// It serves the `_cleveragents/plan/*` methods of spec 001 (create, execute,
// status) plus plan/cancel. State lives in NATS JetStream next to sessions:
//
//   - the KV bucket skillhost_plans keeps one record per plan (definition,
//     status, checkpoint: each completed step's output and how often each
//     step was started). Every change is a revision-checked update, so a
//     cancel and a finishing step never overwrite each other, also across
//     hosts.
//   - the work-queue stream SKILLHOST_PLAN_STEPS holds one job per running
//     execution: "run step i". A durable pull consumer shared by every host
//     hands each job to one worker (explicit ack, MaxDeliver deliveries at
//     most). The worker runs the step through the plugin registry,
//     checkpoints its output, enqueues the next step's job and only then
//     acknowledges — or, when the next step has room on this host at once,
//     starts it in that same checkpoint and runs it under the same job
//     (Record.heldBy names the step a job holds). A job left unacknowledged by a crash is redelivered after
//     AckWait, and its plan resumes from the checkpoint: completed steps are
//     never run again, the interrupted one runs again. A step that was
//     running when its host died Config.MaxCrashes times (each start is
//     recorded with the host's boot id, store.Runs) is quarantined instead:
//     the plan fails with reason quarantined (quarantine.go).
//   - the work-queue stream SKILLHOST_PLAN_WEBHOOKS holds one job per
//     ended execution with a webhook, with a consumer of its own that hands
//     it to a delivery.Service (shared with push notifications), so a slow
//     receiver never holds a step runner; the job is acknowledged once the
//     outcome is in the record.
//
// Usage (host wiring):
//
//	m, err := plan.Open(ctx, plan.Deps{Store: st, Skills: registry, Sessions: st}, cfg.Plans) // the plans.* section
//	m.Register(engine, metrics.Middleware)
//	go m.Run(bg) // until bg ends: running steps are interrupted and handed back
package plan
