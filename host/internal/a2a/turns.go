package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// Multi-turn tasks. A skill ends its turn in input-required or
// auth-required by calling the task_interrupt host function before it
// returns (sdk.AskInput, sdk.NeedAuth): the task moves there with the
// skill's question as its status message, which is also appended to the
// history, and the turn's stream ends (the state is final for streams, as
// A2A says). The task then holds no sandbox instance and no running-call
// slot. A follow-up SendMessage (or SendStreamingMessage) whose
// message.taskId names the task, from its owner, runs the skill's next
// turn: the message joins the history, the task moves back to working (a
// revision-checked update: one follow-up wins, a second one is refused),
// and the skill gets the follow-up's parts as its input (input_schema is
// not applied: it describes the first message) and reads the history with
// task_history. Every move is signed into the provenance chain, published
// to the task's events (any host) and pushed. A task left interrupted for
// ServiceConfig.InputTimeout fails with reason input_timeout (timeout.go).

// taskTurn is the hostfn view of rec's next turn: its id, its number (the
// user messages so far) and its history as the skill reads it.
func taskTurn(rec *Record) *hostfn.Task {
	t := &hostfn.Task{ID: string(rec.Task.ID)}
	for _, m := range rec.Task.History {
		if m == nil {
			continue
		}
		role := "agent"
		if m.Role == a2av1.MessageRoleUser {
			role = "user"
			t.Turn++
		}
		t.History = append(t.History, historyMessage(role, m))
	}
	return t
}

// historyMessage is m as a skill reads it: its text parts joined by
// newlines and its (first) data part.
func historyMessage(role string, m *a2av1.Message) hostfn.Message {
	out := hostfn.Message{Role: role}
	var texts []string
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case a2av1.Text:
			texts = append(texts, string(c))
		case a2av1.Data:
			if out.Data == nil {
				if b, err := json.Marshal(c.Value); err == nil {
					out.Data = b
				}
			}
		}
	}
	out.Text = strings.Join(texts, "\n")
	return out
}

// interruptState is the task state a skill's interrupt asks for.
func interruptState(ask *hostfn.Interrupt) TaskState {
	if ask.State == hostfn.AuthRequired {
		return StateAuthRequired
	}
	return StateInputRequired
}

// questionMessage is the agent message of an interrupted turn: the skill's
// question as a text part, its data (if any) as a data part.
func questionMessage(t *a2av1.Task, ask *hostfn.Interrupt) *a2av1.Message {
	parts := []*a2av1.Part{a2av1.NewTextPart(ask.Text)}
	if len(ask.Data) > 0 {
		var v any
		if json.Unmarshal(ask.Data, &v) == nil {
			parts = append(parts, a2av1.NewDataPart(v))
		}
	}
	return a2av1.NewMessageForTask(a2av1.MessageRoleAgent, t, parts...)
}

// endTurn records on rec (in memory) that its turn ended asking ask.
func endTurn(rec *Record, ask *hostfn.Interrupt) {
	msg := questionMessage(rec.Task, ask)
	rec.Task.Status.Message = msg
	rec.Task.History = append(rec.Task.History, msg)
}

// continuation is the refusal of a follow-up message to a task in state st.
func continuation(st TaskState) error {
	if st.IsTerminal() {
		return fault.Newf(fault.UnsupportedOperation, fault.ReasonTaskContinuation,
			"task is already %s: it accepts no more messages; send a new message without taskId", st.V03())
	}
	return fault.Newf(fault.UnsupportedOperation, fault.ReasonTaskContinuation,
		"task is %s: a follow-up message is accepted only while the task asks for one (input-required or auth-required)", st.V03())
}

// errNotWaiting aborts the move of a follow-up when the task no longer
// waits for one (another follow-up or a cancel came first).
var errNotWaiting = errors.New("a2a: task no longer waits for input")

// continueTask runs the next turn of the interrupted task that
// req.Message.TaskID names (see the top of this file). The task must be
// the caller's (another owner's is task_not_found) and interrupted; it is
// moved to working before the call starts. When sub is true the
// subscription is taken before the move, so it sees every event of the turn.
func (s *Service) continueTask(ctx context.Context, req *a2av1.SendMessageRequest, sub bool, pushCfg *a2av1.PushConfig) (*Record, *run, *subscription, error) {
	who := auth.From(ctx)
	id := req.Message.TaskID
	rec, _, err := s.owned(ctx, id, req.Tenant)
	if err != nil {
		return nil, nil, nil, err
	}
	if st := rec.State(); !st.IsInterrupted() {
		return nil, nil, nil, continuation(st)
	}
	if c := req.Message.ContextID; c != "" && c != rec.Task.ContextID {
		return nil, nil, nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "message.contextId is not the task's context (leave it out, or send the task's)")
	}
	if sid, err := skillIDOf(req.Message.Metadata); err != nil || (sid != "" && sid != rec.SkillID) {
		return nil, nil, nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "the task runs skill %s; a follow-up cannot name another", rec.SkillID)
	}
	if _, _, ok := findSkill(s.cfg.Snapshot().Plugins, rec.SkillID); !ok {
		return nil, nil, nil, fault.Newf(fault.InvalidParams, fault.ReasonUnknownSkill, "the task's skill %s is no longer loaded", rec.SkillID)
	}
	if err := who.AllowSkill(rec.Plugin, rec.SkillID); err != nil {
		return nil, nil, nil, err
	}
	if err := s.checkSizes(req); err != nil {
		return nil, nil, nil, err
	}
	input, err := inputOf(req.Message)
	if err != nil {
		return nil, nil, nil, err
	}
	if a, ok := s.cfg.Executor.(Admitter); ok {
		if ctx, err = a.Admit(ctx, rec.SkillID); err != nil {
			return nil, nil, nil, err
		}
	}
	r, rctx, err := s.occupy(ctx, who, id)
	if err != nil {
		return nil, nil, nil, err
	}
	fail := func(subscr *subscription, err error) (*Record, *run, *subscription, error) {
		if subscr != nil {
			_ = subscr.Close()
		}
		s.finish(id, r)
		return nil, nil, nil, err
	}
	var subscr *subscription
	if sub {
		after, err := s.events.lastSeq(ctx, id)
		if err != nil {
			return fail(nil, err)
		}
		if subscr, _, err = s.events.subscribe(ctx, id, after); err != nil {
			return fail(nil, err)
		}
	}
	if pushCfg != nil {
		pushCfg.TaskID = id
		if _, err := s.cfg.Push.Set(ctx, rec.Owner, pushCfg); err != nil {
			return fail(subscr, err)
		}
	}
	msg := *req.Message
	msg.ContextID = rec.Task.ContextID
	facts := map[string]string{}
	if d, err := provenance.Digest(&msg); err == nil {
		facts[provenance.FactInput] = d
	}
	lease, err := s.holdTurn(ctx, rec) // this host's lease on the turn, stored with the move
	if err != nil {
		return fail(subscr, err)
	}
	moved, err := s.cfg.Tasks.Update(ctx, id, StateWorking, func(r *Record) error {
		if !r.State().IsInterrupted() {
			return errNotWaiting
		}
		r.Lease = lease
		r.Task.History = append(r.Task.History, &msg)
		r.Task.Status.Message = nil
		r.note = note{actor: who.Owner(), facts: facts}
		return nil
	})
	if errors.Is(err, errNotWaiting) || errors.Is(err, fault.ErrInvalidState) {
		if cur, gerr := s.cfg.Tasks.Get(ctx, id); gerr == nil {
			err = continuation(cur.State())
		}
	}
	if err != nil {
		return fail(subscr, err)
	}
	s.announce(ctx, moved, nil)
	go s.execute(rctx, r, moved, input, requestID(ctx), true)
	return moved, r, subscr, nil
}
