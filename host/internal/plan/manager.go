package plan

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/store"
)

// maxMetadataBytes caps a plan's metadata object.
const maxMetadataBytes = 64 << 10

// Sessions checks sessions (*store.Store).
type Sessions interface {
	OwnedSession(ctx context.Context, id string, owns func(owner string) bool) (store.Session, error)
}

// Events receives plan progress events (*events.Bus). Publishing is best
// effort: a failure is logged and never fails a plan.
type Events interface {
	Publish(ctx context.Context, e events.Event) (duplicate bool, err error)
}

// Deps are the collaborators of a Manager.
type Deps struct {
	Store    *store.Store // required: the plans bucket and the step stream live here
	Skills   Skills       // required unless Executor is set: runs steps on this host's plugins
	Sessions Sessions     // required
	// Snapshot finds the plugin of a step's skill, so an agent: scope
	// covers skill steps too. Optional. Default: only skill: scopes do.
	Snapshot func() *plugin.Snapshot
	// Principals returns the principal of a plan's owner; steps run as it
	// (its scopes checked again at every step). Optional. Default: steps
	// run with no principal attached (embedding without authorization).
	Principals func(owner string) (auth.Principal, bool)
	// Executor runs steps. Optional. Default: NewLocalExecutor(Skills).
	Executor Executor
	// Events receives progress events. Optional. Default: none.
	Events Events
	// Webhooks delivers final statuses to execution_options.webhook, from
	// a queue of their own (WebhookStream), never on the step runners.
	// Optional. Default: none (a webhook is refused).
	Webhooks *Webhooks
	// Provenance signs every plan and step transition, step output and peer
	// result into the plan's chain (Record.Provenance), in the write that
	// stores it. Optional. Default: nil, no provenance.
	Provenance *provenance.Signer
	// Logger. Optional. Default: slog.Default().
	Logger *slog.Logger
}

// Manager creates, executes and reports plans. Its methods are safe for
// concurrent use; Run executes the steps. Every host of a cluster runs one
// Manager on the same bucket and stream: any of them may run any step.
type Manager struct {
	cfg        settings
	log        *slog.Logger
	st         *store.Store // this host's boot (Boot) and the others' liveness (Dead)
	recs       *records
	jobs       *store.Queue // the step jobs
	hooks      *store.Queue // the webhook jobs (nil without Deps.Webhooks)
	exec       Executor
	sessions   Sessions
	events     Events
	webhooks   *Webhooks
	snapshot   func() *plugin.Snapshot
	principals func(owner string) (auth.Principal, bool)

	listBytes int // record bytes one plan/list decodes (maxListBytes; tests lower it)

	running atomic.Bool
	workers chan struct{} // one token per step running here (cfg.Workers)
	mu      sync.Mutex
	steps   map[string]map[int]context.CancelFunc // execution id -> step -> cancel of its run here
}

// Open binds (creating when missing) the plans bucket, the step work-queue
// stream and its durable consumer. Call Run to execute steps.
func Open(ctx context.Context, d Deps, section Config) (*Manager, error) {
	cfg, err := resolve(section)
	if err != nil {
		return nil, err
	}
	if d.Store == nil || d.Sessions == nil || (d.Skills == nil && d.Executor == nil) {
		return nil, errors.New("plan: Deps.Store, Sessions and Skills (or Executor) are required")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	cfg.replicas = d.Store.Replicas()
	cfg.MaxRecord = min(cfg.MaxRecord, config.ByteSize(d.Store.MaxRecordBytes()))
	if d.Executor == nil {
		d.Executor = NewLocalExecutor(d.Skills)
	}
	kv, err := store.OpenBucket[Record](ctx, d.Store, store.BucketConfig{
		Name: Bucket, Description: "skillhost plans and their checkpoints",
		TTL: cfg.Retention, MaxValueBytes: int32(cfg.MaxRecord), MaxBytes: int64(cfg.MaxBucket),
		Replicas: cfg.replicas, What: "plan", Retries: maxUpdateRetries, Contended: contended,
	})
	if err != nil {
		return nil, fmt.Errorf("plan: open bucket: %w", err)
	}
	jobs, err := d.Store.OpenQueue(ctx, store.QueueConfig{
		Stream:              Stream,
		Description:         "skillhost plan steps waiting to run (work queue)",
		Subjects:            subjectAll,
		Consumer:            ConsumerName,
		ConsumerDescription: "skillhost plan step runner (shared by every host)",
		AckWait:             cfg.AckWait,
		MaxDeliver:          cfg.MaxDeliver,
		Dedupe:              DefaultDuplicates,
		Replicas:            cfg.replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("plan: open queue %s: %w", Stream, err)
	}
	usage, err := openPlanUsage(ctx, d.Store, cfg)
	if err != nil {
		return nil, fmt.Errorf("plan: open usage: %w", err)
	}
	var hooks *store.Queue
	if d.Webhooks != nil {
		if hooks, err = openWebhookQueue(ctx, d.Store, cfg); err != nil {
			return nil, err
		}
	}
	return &Manager{
		cfg: cfg, log: d.Logger, st: d.Store, recs: &records{kv: kv, max: int(cfg.MaxRecord), prov: d.Provenance, usage: usage}, jobs: jobs, hooks: hooks,
		exec: d.Executor, sessions: d.Sessions, events: d.Events, webhooks: d.Webhooks, snapshot: d.Snapshot, principals: d.Principals,
		workers: make(chan struct{}, cfg.Workers), listBytes: maxListBytes, steps: map[string]map[int]context.CancelFunc{},
	}, nil
}

// CreateRequest is the input of Create.
type CreateRequest struct {
	SessionID  string
	PlanID     string          // "" generates "plan_<hex>"
	Definition json.RawMessage // see Definition
	Metadata   json.RawMessage // optional object kept with the plan
}

// Create validates and stores a new plan in status created.
func (m *Manager) Create(ctx context.Context, in CreateRequest) (*Record, error) {
	sess, err := m.requireSession(ctx, in.SessionID)
	if err != nil {
		return nil, err
	}
	if in.PlanID == "" {
		in.PlanID = newID(generatedPlanIDPrefix)
	} else if !printable(in.PlanID, MaxPlanIDBytes) {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams,
			fmt.Sprintf("plan_id must be at most %d bytes of printable UTF-8", MaxPlanIDBytes)).With("field", "plan_id")
	}
	def, err := parseDefinition(in.Definition, m.cfg)
	if err != nil {
		return nil, err
	}
	if err := m.authorize(ctx, def); err != nil {
		return nil, err
	}
	meta := bytes.TrimSpace(in.Metadata)
	if string(meta) == "null" {
		meta = nil
	}
	if len(meta) > 0 && meta[0] != '{' {
		return nil, badField("metadata", "must be an object")
	}
	if len(meta) > maxMetadataBytes {
		return nil, badField("metadata", fmt.Sprintf("is %d bytes, over the %d-byte limit", len(meta), maxMetadataBytes))
	}
	now := time.Now().UTC()
	rec := &Record{
		PlanID: in.PlanID, SessionID: in.SessionID, Owner: sess.Owner, Definition: *def, Metadata: meta,
		Status: StatusCreated, CreatedAt: now, UpdatedAt: now,
	}
	if err := m.recs.create(ctx, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// ExecuteOptions are plan/execute's execution_options and input.
type ExecuteOptions struct {
	// Parallel runs every step whose dependencies are done at once;
	// otherwise one step runs at a time, in definition order as far as the
	// dependencies allow.
	Parallel bool
	// Timeout ends the whole execution (0 = none); a running step is
	// stopped and the plan fails with reason timeout.
	Timeout time.Duration
	// Input is read by ${plan.input…} references (any JSON value; empty =
	// none).
	Input json.RawMessage
	// Webhook is the URL that receives the final status ("" = none).
	Webhook string
	// WebhookSecret signs the webhook ("" = the configured secret).
	WebhookSecret string
}

// Execute starts a new execution of a created, failed or cancelled plan
// and returns at once; Run executes the steps. A plan that is executing or
// completed is InvalidState.
func (m *Manager) Execute(ctx context.Context, sessionID, planID string, opts ExecuteOptions) (*Record, error) {
	if _, err := m.requireSession(ctx, sessionID); err != nil {
		return nil, err
	}
	if opts.Timeout < 0 || opts.Timeout > m.cfg.MaxTimeout {
		return nil, badField("execution_options.timeout", fmt.Sprintf("must be a positive number of milliseconds, at most %d", m.cfg.MaxTimeout.Milliseconds()))
	}
	input := bytes.TrimSpace(opts.Input)
	if string(input) == "null" {
		input = nil
	}
	if len(input) > int(m.cfg.MaxDefinition) {
		return nil, badField("input", fmt.Sprintf("is %d bytes, over the %d-byte limit", len(input), int(m.cfg.MaxDefinition)))
	}
	var hook *Webhook
	if opts.Webhook != "" || opts.WebhookSecret != "" {
		var err error
		if hook, err = m.webhooks.prepare(opts.Webhook, opts.WebhookSecret); err != nil {
			return nil, err
		}
	}
	rec, _, err := m.recs.get(ctx, sessionID, planID)
	if err != nil {
		return nil, err
	}
	if err := executable(rec); err != nil {
		return nil, err
	}
	if err := m.authorize(ctx, &rec.Definition); err != nil {
		return nil, err
	}
	if err := rec.Definition.checkInput(input, int(m.cfg.MaxRecord)); err != nil {
		return nil, err
	}
	g := rec.Definition.graph()
	start := func(r *Record, now time.Time) []int {
		r.Status, r.StartedAt, r.FinishedAt, r.Error = StatusExecuting, &now, nil, nil
		r.Parallel, r.Input, r.Webhook, r.Deadline = opts.Parallel, input, hook, nil
		if opts.Timeout > 0 {
			dl := now.Add(opts.Timeout)
			r.Deadline = &dl
		}
		r.Checkpoint = freshCheckpoint(len(r.Definition.Steps))
		return r.queueReady(g)
	}
	// The first jobs are published before the record names the execution,
	// so no crash can leave an executing plan without a job; a job whose
	// execution never made it into the record is dropped by the runner.
	execID := newID(executionIDPrefix)
	for _, i := range start(rec, time.Now()) {
		if err := m.publish(ctx, job{SessionID: sessionID, PlanID: planID, ExecutionID: execID, Step: i}); err != nil {
			return nil, err
		}
	}
	rec, err = m.recs.update(ctx, sessionID, planID, func(r *Record) error {
		if err := executable(r); err != nil {
			return err
		}
		r.ExecutionID = execID
		start(r, time.Now().UTC())
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.emit(ctx, rec, events.PlanStarted, "", 0, map[string]any{"total_steps": len(rec.Definition.Steps), "parallel": rec.Parallel})
	return rec, nil
}

func executable(r *Record) error {
	switch r.Status {
	case StatusExecuting:
		return fault.Newf(fault.InvalidState, fault.ReasonPlanExecuting, "plan %q is already executing (execution %s)", clip(r.PlanID, 64), r.ExecutionID).
			With("plan_id", r.PlanID)
	case StatusCompleted:
		return fault.Newf(fault.InvalidState, fault.ReasonPlanCompleted, "plan %q has completed; create a new plan to run it again", clip(r.PlanID, 64)).
			With("plan_id", r.PlanID)
	}
	return nil
}

// Status returns the plan of the session.
func (m *Manager) Status(ctx context.Context, sessionID, planID string) (*Record, error) {
	if _, err := m.requireSession(ctx, sessionID); err != nil {
		return nil, err
	}
	rec, _, err := m.recs.get(ctx, sessionID, planID)
	return rec, err
}

// Cancel stops an executing plan: its status becomes cancelled at once and
// the running steps' sandbox calls are interrupted (on other hosts within
// AckWait/3).
func (m *Manager) Cancel(ctx context.Context, sessionID, planID string) (*Record, error) {
	if _, err := m.requireSession(ctx, sessionID); err != nil {
		return nil, err
	}
	rec, err := m.recs.update(ctx, sessionID, planID, func(r *Record) error {
		if r.Status != StatusExecuting {
			return fault.Newf(fault.InvalidState, fault.ReasonPlanNotExecuting, "plan %q is %s, not executing", clip(r.PlanID, 64), r.Status).
				With("plan_id", r.PlanID).With("status", r.Status)
		}
		now := time.Now().UTC()
		r.Status, r.FinishedAt = StatusCancelled, &now
		r.endActive(now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.interrupt(rec.ExecutionID)
	m.finished(ctx, rec)
	return rec, nil
}

// requireSession returns the active session id of the caller's principal
// (another principal's session, and so its plans, is not found).
func (m *Manager) requireSession(ctx context.Context, id string) (store.Session, error) {
	if id == "" {
		return store.Session{}, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "session_id is required; create one with _cleveragents/session/create")
	}
	return m.sessions.OwnedSession(ctx, id, auth.From(ctx).OwnsSession(id))
}

// authorize checks that the caller's scopes grant every step's skill (a
// skill: scope, or an agent: scope on its plugin) before the plan is
// stored or started; each step is checked again when it runs.
func (m *Manager) authorize(ctx context.Context, def *Definition) error {
	who := auth.From(ctx)
	for i, st := range def.Steps {
		agent := st.Agent
		if agent == "" && m.snapshot != nil {
			if p, _, ok := m.snapshot().Skill(st.Action); ok {
				agent = p.Manifest.Name
			}
		}
		if err := who.AllowSkill(agent, st.Action); err != nil {
			return fault.From(err).With("field", fmt.Sprintf("plan_definition.steps[%d]", i))
		}
	}
	return nil
}

// interrupt cancels the execution's steps that run on this host.
func (m *Manager) interrupt(execID string) {
	m.mu.Lock()
	var cancels []context.CancelFunc
	for _, c := range m.steps[execID] {
		cancels = append(cancels, c)
	}
	m.mu.Unlock()
	for _, c := range cancels {
		c()
	}
}

// track registers the cancel of a step running here; the returned func
// removes it.
func (m *Manager) track(execID string, step int, cancel context.CancelFunc) func() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.steps[execID] == nil {
		m.steps[execID] = map[int]context.CancelFunc{}
	}
	m.steps[execID][step] = cancel
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.steps[execID], step)
		if len(m.steps[execID]) == 0 {
			delete(m.steps, execID)
		}
	}
}

func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + hex.EncodeToString(b[:])
}
