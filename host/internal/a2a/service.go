package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/a2a/push"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/share"
)

// Executor runs one skill call; *plugin.Registry implements it.
type Executor interface {
	Execute(ctx context.Context, call plugin.Call) (*plugin.Outcome, error)
}

// Admitter is an Executor that takes a skill call's rate tokens
// (policy.skill_rates) ahead of Execute, as *plugin.Registry does: a
// message it refuses starts no task.
type Admitter interface {
	Admit(ctx context.Context, skillID string) (context.Context, error)
}

// DefaultMaxRunning is the default of ServiceConfig.MaxRunning (not a
// configuration key).
const DefaultMaxRunning = 256

// ServiceConfig wires a Service.
type ServiceConfig struct {
	// A2A is the a2a.* section: max_metadata caps the JSON size of
	// message.metadata and of the request's metadata, each (stored with the
	// task); max_history that of the message stored as the task's history;
	// max_streams and max_streams_per_key (0: no per-key share) the task
	// streams open at once on this host (streams.go); input_timeout how long
	// a task may wait for a follow-up message (input-required,
	// auth-required) before Run fails it with reason input_timeout;
	// lease_sweep how often this host looks for tasks of lost hosts
	// (lease.go). Optional: the zero section is config.Defaults().A2A.
	config.A2A
	Executor   Executor
	Snapshot   func() *plugin.Snapshot
	Tasks      *TaskStore
	Cards      *agentcard.Service
	Logger     *slog.Logger
	MaxRunning int // tasks executing at once; default DefaultMaxRunning
	// Guard caps the tasks of one API key running at once. Optional.
	// Default: an in-memory one letting MaxRunning tasks run.
	Guard *auth.Guard
	// Push stores push configs and delivers task updates. Optional.
	// Default: nil (push methods answer -32003).
	Push *push.Service
	// Contexts maps each contextId to a session the skill runs in.
	// Optional. Default: nil (skills called through A2A get no session).
	Contexts *Contexts
	// Principals returns the principal of a task's owner, for a task of a
	// lost host that runs again here. Optional. Default: local owners only
	// (a key's tasks then end host_lost instead).
	Principals func(owner string) (auth.Principal, bool)
}

// Service implements the A2A task methods over the plugin registry.
type Service struct {
	cfg     ServiceConfig
	events  *events
	cancels func() // stops listening to the cancels other hosts send
	log     *slog.Logger
	streams *share.Counter // open task streams, host-wide and per key
	lease   *leases        // the tasks this host holds, and those of lost hosts (lease.go)

	mu      sync.Mutex
	running map[a2av1.TaskID]*run
	closed  bool
	wg      sync.WaitGroup
}

// run is one task executing on this host.
type run struct {
	cancel  context.CancelCauseFunc
	done    chan struct{}
	release func() // frees the owner's running-task slot
	// final and err are a blocking task's outcome (blocking.go), set before
	// done is closed: the stored terminal record, or why it is not stored.
	final *Record
	err   error
}

// NewService returns a Service; Executor, Snapshot, Tasks and Cards are required.
func NewService(cfg ServiceConfig) (*Service, error) {
	if cfg.Executor == nil || cfg.Snapshot == nil || cfg.Tasks == nil || cfg.Cards == nil {
		return nil, errors.New("a2a: NewService needs Executor, Snapshot, Tasks and Cards")
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = DefaultMaxRunning
	}
	if cfg.A2A == (config.A2A{}) {
		cfg.A2A = config.Defaults().A2A
	}
	if cfg.Guard == nil {
		cfg.Guard = auth.NewGuard(nil, cfg.MaxRunning)
	}
	if cfg.InputTimeout <= 0 {
		return nil, fmt.Errorf("a2a: a2a.input_timeout %v: must be positive", cfg.InputTimeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Service{cfg: cfg, events: cfg.Tasks.events, log: cfg.Logger, running: map[a2av1.TaskID]*run{}, streams: newStreamCounter(cfg)}
	stop, err := s.events.st.Listen(CancelSubject+"*", s.onCancel)
	if err != nil {
		return nil, fmt.Errorf("a2a: subscribe to cancels: %w", err)
	}
	s.cancels = stop
	if err := s.newLeases(cfg); err != nil {
		stop()
		return nil, err
	}
	return s, nil
}

// onCancel stops the sandbox call of a task canceled on another host, when
// it runs here. The task record is already canceled by that host.
func (s *Service) onCancel(subject string) {
	id := a2av1.TaskID(strings.TrimPrefix(subject, CancelSubject))
	s.mu.Lock()
	r := s.running[id]
	s.mu.Unlock()
	if r != nil {
		s.log.Info("a2a: task canceled from another host; stopping it", "task_id", id)
		r.cancel(fault.New(fault.Canceled, fault.ReasonCanceled, "canceled by the client"))
	}
}

// start validates and routes req and starts executing the task. A blocking
// task (the reply waits for its end) starts working at once, visible only
// through its live record, and is stored once, terminal (blocking.go);
// any other is stored submitted first. When sub is true the returned
// subscription is registered before execution starts, so it sees every
// event.
func (s *Service) start(ctx context.Context, req *a2av1.SendMessageRequest, sub, blocking bool) (*Record, *run, *subscription, error) {
	if err := auth.From(ctx).AllowKeyWide("A2A tasks"); err != nil {
		return nil, nil, nil, err
	}
	if req.Message == nil {
		return nil, nil, nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "params.message is required")
	}
	if req.Message.ID == "" {
		return nil, nil, nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "params.message.messageId is required")
	}
	var pushCfg *a2av1.PushConfig
	if req.Config != nil && req.Config.PushConfig != nil {
		p, err := s.pushOn()
		if err != nil {
			return nil, nil, nil, err
		}
		c := *req.Config.PushConfig
		if err := p.Check(&c); err != nil {
			return nil, nil, nil, err
		}
		pushCfg = &c
	}
	if err := checkOutputModes(req.Config); err != nil {
		return nil, nil, nil, err
	}
	if err := checkHistoryLength(historyLen(req.Config)); err != nil {
		return nil, nil, nil, err
	}
	var err error
	if req.Tenant, err = tenantOf(ctx, req.Tenant); err != nil {
		return nil, nil, nil, err
	}
	if req.Message.TaskID != "" { // a follow-up: the task's next turn (turns.go)
		return s.continueTask(ctx, req, sub, pushCfg)
	}
	p, skill, err := route(s.cfg.Snapshot(), req.Tenant, req)
	if err != nil {
		return nil, nil, nil, err
	}
	who := auth.From(ctx)
	if err := who.AllowSkill(p.Manifest.Name, skill.ID); err != nil {
		return nil, nil, nil, err
	}
	if err := s.checkSizes(req); err != nil {
		return nil, nil, nil, err
	}
	input, err := inputOf(req.Message)
	if err != nil {
		return nil, nil, nil, err
	}
	ctxID := req.Message.ContextID
	if ctxID == "" {
		ctxID = a2av1.NewContextID()
	} else if len(ctxID) > MaxTaskIDLen {
		return nil, nil, nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "contextId longer than %d bytes", MaxTaskIDLen)
	}
	if a, ok := s.cfg.Executor.(Admitter); ok { // the task's execution spends what it took
		if ctx, err = a.Admit(ctx, skill.ID); err != nil {
			return nil, nil, nil, err
		}
	}
	msg := *req.Message
	msg.TaskID, msg.ContextID = a2av1.NewTaskID(), ctxID
	now := time.Now().UTC()
	task := &a2av1.Task{ID: msg.TaskID, ContextID: ctxID, History: []*a2av1.Message{&msg},
		Status:   a2av1.TaskStatus{State: a2av1.TaskStateSubmitted, Timestamp: &now},
		Metadata: map[string]any{MetaSkillID: skill.ID, "plugin": p.Manifest.Name}}
	rec := &Record{Task: task, SkillID: skill.ID, Plugin: p.Manifest.Name, Tenant: req.Tenant, Owner: who.Owner(), Updated: now}
	if err := s.cfg.Tasks.signCreated(rec, who.Owner()); err != nil {
		return nil, nil, nil, err
	}
	if blocking {
		task.Status.State = a2av1.TaskStateWorking
		if err := s.cfg.Tasks.signMove(rec, StateSubmitted, 0); err != nil {
			return nil, nil, nil, err
		}
	}

	r, rctx, err := s.occupy(ctx, who, task.ID)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := s.hold(ctx, rec, blocking); err != nil { // this host's lease, stored with the task
		s.finish(task.ID, r)
		return nil, nil, nil, err
	}

	if pushCfg != nil { // before execution: the config sees every update
		pushCfg.TaskID = task.ID
		if _, err := s.cfg.Push.Set(ctx, rec.Owner, pushCfg); err != nil {
			// Refused (push_limit, bad URL, store) as CreatePushConfig
			// would be: the client must not believe it will be notified.
			s.finish(task.ID, r)
			return nil, nil, nil, err
		}
	}
	if blocking {
		// Stored only when it ends: admitted now, before it runs.
		if err := s.cfg.Tasks.AdmitLive(ctx, rec); err != nil {
			s.finish(task.ID, r)
			return nil, nil, nil, err
		}
		s.lease.stored(task.ID)
		s.cfg.Tasks.putLive(rec)
		go s.executeBlocking(rctx, r, rec, input, requestID(ctx))
		return rec, r, nil, nil
	}
	var subscr *subscription
	if sub { // before the task exists, so it sees every event
		var err error
		if subscr, _, err = s.events.subscribe(ctx, task.ID, 0); err != nil {
			s.finish(task.ID, r)
			return nil, nil, nil, err
		}
	}
	s.lease.stored(task.ID) // from here a record may exist, whatever Create answers
	if err := s.cfg.Tasks.Create(ctx, rec); err != nil {
		if subscr != nil {
			_ = subscr.Close()
		}
		s.finish(task.ID, r)
		return nil, nil, nil, err
	}
	go s.execute(rctx, r, rec, input, requestID(ctx), false)
	return rec, r, subscr, nil
}

// occupy takes a running-task slot of who and of this host for task id
// and registers its run; finish frees both.
func (s *Service) occupy(ctx context.Context, who auth.Principal, id a2av1.TaskID) (*run, context.Context, error) {
	release, err := s.cfg.Guard.Occupy(who)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refusal(); err != nil { // shutting down (draining), or full
		release()
		return nil, nil, err
	}
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r := &run{cancel: cancel, done: make(chan struct{}), release: release}
	s.running[id] = r // a follow-up may replace the run of the turn that is just ending
	s.wg.Add(1)
	return r, rctx, nil
}

func (s *Service) finish(id a2av1.TaskID, r *run) {
	s.mu.Lock()
	mine := s.running[id] == r
	if mine {
		delete(s.running, id)
	}
	s.mu.Unlock()
	if mine { // else a follow-up's run holds the task now
		s.unhold(id)
	}
	s.events.done(id)
	r.release()
	r.cancel(nil)
	close(r.done)
	s.wg.Done()
}

// execute runs one turn of the task's skill and records its outcome:
// completed, failed, or interrupted (the skill asked for input). moved: the
// task is working already (a follow-up moved it).
func (s *Service) execute(ctx context.Context, r *run, rec *Record, input json.RawMessage, reqID string, moved bool) {
	task := rec.Task
	defer s.finish(task.ID, r)
	sctx := context.WithoutCancel(ctx) // records the outcome even after a cancel
	if !moved && !s.transition(sctx, task.ID, StateWorking, nil, nil) {
		return
	}
	out, ask, peers, err := s.run(ctx, rec, input, reqID)
	handed, err := s.afterRun(rec, false, err)
	if handed { // another host ends it or runs it again
		return
	}
	if err == nil && ask != nil {
		s.transition(sctx, task.ID, interruptState(ask), func(rc *Record) {
			endTurn(rc, ask)
			rc.note.peers = peers
		}, nil)
		return
	}
	if err != nil {
		st := StateForError(err)
		s.transition(sctx, task.ID, st, func(rc *Record) {
			rc.Task.Status.Message = errorMessage(rc.Task, err)
			rc.note.peers = peers
		}, nil)
		return
	}
	art := artifactOf(rec, out)
	s.transition(sctx, task.ID, StateCompleted, func(rc *Record) {
		rc.Task.Artifacts = append(rc.Task.Artifacts, art)
		rc.note.peers = peers
	},
		&a2av1.TaskArtifactUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Artifact: art, LastChunk: true})
}

// transition stores the move to next and publishes it (preceded by pre, if
// any). It reports false when the task was not moved (it became terminal
// meanwhile, e.g. canceled, or the store refused). A record too large to
// store, or one the bucket has no room for, fails the task instead (reason
// output_limit, storage_full), without the change that did not fit.
func (s *Service) transition(ctx context.Context, id a2av1.TaskID, next TaskState, mutate func(*Record), pre a2av1.Event) bool {
	rec, err := s.update(ctx, id, next, func(r *Record) error {
		if mutate != nil {
			mutate(r)
		}
		return nil
	})
	if err != nil && next != StateFailed && (errors.Is(err, fault.New(fault.ResourceExhausted, fault.ReasonOutputLimit, "")) ||
		errors.Is(err, fault.New(fault.ResourceExhausted, fault.ReasonStorageFull, ""))) {
		return s.transition(ctx, id, StateFailed, func(r *Record) { r.Task.Status.Message = errorMessage(r.Task, err) }, nil)
	}
	if err != nil {
		if !errors.Is(err, fault.ErrInvalidState) {
			s.log.Error("a2a: task update failed", "task_id", id, "state", next, "err", err)
		}
		return false
	}
	if next.IsTerminal() || next.IsInterrupted() { // the run's end (a waiting task holds no lease)
		s.lease.settle(id)
	}
	s.announce(ctx, rec, pre)
	return true
}

// announce publishes rec's latest move (preceded by pre, if any) to its
// subscribers and push configs. A terminal or interrupted state ends the
// task's streams.
func (s *Service) announce(ctx context.Context, rec *Record, pre a2av1.Event) {
	id, st := rec.Task.ID, rec.State()
	status := &a2av1.TaskStatusUpdateEvent{TaskID: id, ContextID: rec.Task.ContextID, Status: rec.Task.Status}
	withLinks(rec, pre, status)
	if pre != nil {
		s.publish(ctx, id, event{ev: pre})
	}
	s.publish(ctx, id, event{ev: status, final: st.IsTerminal() || st.IsInterrupted()})
	s.notifyPush(ctx, rec.Owner, id, pre, status)
}

// publish sends a task event to its subscribers on every host. The task
// record is already stored: a lost event delays a subscriber, it never
// changes the task.
func (s *Service) publish(ctx context.Context, id a2av1.TaskID, e event) {
	if err := s.events.publish(ctx, id, e); err != nil {
		s.log.Warn("a2a: task event not published", "task_id", id, "err", err)
	}
}

func requestID(ctx context.Context) string {
	return truncate(auth.InvocationFrom(ctx).RequestID, 128)
}
