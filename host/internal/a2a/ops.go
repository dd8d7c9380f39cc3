package a2a

import (
	"context"
	"io"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// SendMessage starts a task for the message's skill, or, when the message
// names an interrupted task of the caller (taskId), runs that task's next
// turn (turns.go). It blocks until the task is terminal or interrupted,
// unless configuration.returnImmediately.
func (s *Service) SendMessage(ctx context.Context, req *a2av1.SendMessageRequest) (*a2av1.Task, error) {
	blocking := req.Config == nil || !req.Config.ReturnImmediately
	rec, r, _, err := s.start(ctx, req, false, blocking)
	if err != nil {
		return nil, err
	}
	if blocking {
		select {
		case <-r.done:
		case <-ctx.Done():
			return nil, fault.From(ctx.Err())
		}
		if r.err != nil {
			return nil, r.err
		}
		if r.final != nil { // a first turn: stored once, when it ended (blocking.go)
			return trimTask(r.final.Task, true, historyLen(req.Config)), nil
		}
	}
	if !blocking { // returnImmediately: the task as created (submitted) or moved (working), in progress, as A2A says
		return trimTask(rec.Task, true, historyLen(req.Config)), nil
	}
	cur, err := s.cfg.Tasks.Get(ctx, rec.Task.ID) // a follow-up's turn ended: its stored record
	if err != nil {
		return nil, err
	}
	return trimTask(cur.Task, true, historyLen(req.Config)), nil
}

// checkHistoryLength refuses a negative historyLength (0 means no history;
// absent, all of it).
func checkHistoryLength(n *int) error {
	if n != nil && *n < 0 {
		return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "historyLength must not be negative")
	}
	return nil
}

func historyLen(cfg *a2av1.SendMessageConfig) *int {
	if cfg == nil {
		return nil
	}
	return cfg.HistoryLength
}

// SendStreamingMessage starts a task and streams it: the Task first, then
// status updates (working, progress reports), the output artifact and the
// terminal status, after which the stream ends. The stream takes one of
// the caller's task streams first (admitStream): refused, no task starts.
func (s *Service) SendStreamingMessage(ctx context.Context, req *a2av1.SendMessageRequest) (*TaskStream, error) {
	release, err := s.admitStream(ctx)
	if err != nil {
		return nil, err
	}
	rec, _, sub, err := s.start(ctx, req, true, false)
	if err != nil {
		release()
		return nil, err
	}
	return &TaskStream{first: rec.Task, sub: sub, release: release}, nil
}

// GetTask returns a task; TaskNotFound (-32001) when unknown.
func (s *Service) GetTask(ctx context.Context, req *a2av1.GetTaskRequest) (*a2av1.Task, error) {
	if err := checkHistoryLength(req.HistoryLength); err != nil {
		return nil, err
	}
	rec, _, err := s.owned(ctx, req.ID, req.Tenant)
	if err != nil {
		return nil, err
	}
	return trimTask(rec.Task, true, req.HistoryLength), nil
}

// owned returns the task if it is the caller's (and of tenant, when set):
// another principal's task is TaskNotFound, exactly like a missing one.
// live reports a task that a blocking SendMessage runs (not stored yet).
func (s *Service) owned(ctx context.Context, id a2av1.TaskID, tenant string) (rec *Record, live bool, err error) {
	if tenant, err = tenantOf(ctx, tenant); err != nil {
		return nil, false, err
	}
	who := auth.From(ctx)
	if err := who.AllowKeyWide("A2A tasks"); err != nil {
		return nil, false, err
	}
	rec, live, err = s.cfg.Tasks.Owned(ctx, who.Owner(), id)
	if err != nil {
		return nil, false, err
	}
	if !who.Owns(rec.Owner) || (tenant != "" && rec.Tenant != tenant) {
		return nil, false, notFound(id)
	}
	return rec, live, nil
}

// ListTasks lists tasks, newest update first.
func (s *Service) ListTasks(ctx context.Context, req *a2av1.ListTasksRequest) (*a2av1.ListTasksResponse, error) {
	if err := auth.From(ctx).AllowKeyWide("A2A tasks"); err != nil {
		return nil, err
	}
	tenant, err := tenantOf(ctx, req.Tenant)
	if err != nil {
		return nil, err
	}
	if err := checkHistoryLength(req.HistoryLength); err != nil {
		return nil, err
	}
	st := StateOf(req.Status)
	if req.Status != "" {
		if _, ok := ParseState(string(req.Status)); !ok {
			return nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "unknown status %q", truncate(string(req.Status), 64))
		}
	}
	return s.cfg.Tasks.List(ctx, ListQuery{Owner: auth.From(ctx).Owner(), ContextID: req.ContextID, Status: st, Tenant: tenant,
		After: req.StatusTimestampAfter, PageSize: req.PageSize, PageToken: req.PageToken,
		IncludeArtifacts: req.IncludeArtifacts, HistoryLength: req.HistoryLength})
}

// CancelTask moves a task to canceled and stops its running sandbox call.
// A terminal task answers TaskNotCancelable (-32002).
func (s *Service) CancelTask(ctx context.Context, req *a2av1.CancelTaskRequest) (*a2av1.Task, error) {
	rec, live, err := s.owned(ctx, req.ID, req.Tenant)
	if err != nil {
		return nil, err
	}
	cause := fault.New(fault.Canceled, fault.ReasonCanceled, "canceled by the client")
	if live {
		return s.cancelLive(ctx, rec, cause)
	}
	return s.cancelStored(ctx, req.ID, cause)
}

// cancelStored moves a stored task to canceled and stops its call, if one
// runs (an interrupted task runs none: it is only moved).
func (s *Service) cancelStored(ctx context.Context, id a2av1.TaskID, cause *fault.Error) (*a2av1.Task, error) {
	actor := auth.From(ctx).Owner()
	ok := s.transition(ctx, id, StateCanceled, func(r *Record) {
		r.Task.Status.Message = errorMessage(r.Task, cause)
		r.note = note{actor: actor}
	}, nil)
	if !ok {
		cur, err := s.cfg.Tasks.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		return nil, cur.State().CanTransition(StateCanceled)
	}
	s.stop(id, cause)
	cur, err := s.cfg.Tasks.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return cur.Task, nil
}

// SubscribeToTask streams a task's events, the Task first, wherever the
// task runs: events after the Task snapshot arrive in order from the task
// events stream (an event the snapshot already reflects may repeat). A
// terminal task answers UnsupportedOperation (-32004).
func (s *Service) SubscribeToTask(ctx context.Context, req *a2av1.SubscribeToTaskRequest) (_ *TaskStream, err error) {
	if _, _, err := s.owned(ctx, req.ID, req.Tenant); err != nil {
		return nil, err
	}
	release, err := s.admitStream(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	after, err := s.events.lastSeq(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	rec, _, err := s.owned(ctx, req.ID, req.Tenant) // after the sequence: no later event is missed
	if err == nil && rec.State().IsTerminal() {
		err = fault.Newf(fault.UnsupportedOperation, fault.ReasonTaskTerminal, "task is already %s: nothing to subscribe to", rec.State().V03())
	}
	if err != nil {
		return nil, err
	}
	sub, ok, err := s.events.subscribe(ctx, req.ID, after)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fault.Newf(fault.ResourceExhausted, fault.ReasonPoolSaturated, "task has %d streams on this host already", maxSubscribers)
	}
	return &TaskStream{first: rec.Task, sub: sub, release: release}, nil
}

// TaskStream is a task's event stream (jsonrpc.Stream): the Task, then its
// updates until the task is terminal or interrupted. Events are a2a-go
// values (*a2a.Task, *a2a.TaskStatusUpdateEvent, *a2a.TaskArtifactUpdateEvent).
type TaskStream struct {
	first   *a2av1.Task
	sent    bool
	sub     *subscription
	release func() // the caller's task stream unit (nil: none taken)
}

// NextEvent returns the next event; io.EOF after the last.
func (t *TaskStream) NextEvent(ctx context.Context) (a2av1.Event, error) {
	if !t.sent {
		t.sent = true
		return t.first, nil
	}
	if t.sub == nil {
		return nil, io.EOF
	}
	e, err := t.sub.next(ctx)
	if err != nil {
		return nil, err
	}
	return e.ev, nil
}

// Close stops the stream (the task goes on) and frees its unit.
func (t *TaskStream) Close() error {
	if t.release != nil {
		defer t.release()
	}
	if t.sub != nil {
		return t.sub.Close()
	}
	return nil
}
