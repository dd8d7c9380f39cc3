package plan

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// Executor runs the action of one step. The default (NewLocalExecutor)
// runs skills and the skills of named agents on this host's plugins; an
// executor for remote agents can wrap it and handle the steps it knows.
//
// Errors should be *fault.Error values. Retry (a step's retry policy)
// applies to timeouts and to pool saturation or rate limits; an error with a
// `Retryable() bool` method decides for itself (e.g. a remote peer's 503).
type Executor interface {
	RunStep(ctx context.Context, call StepCall) (*StepOutcome, error)
}

// Reserver is an optional interface of an Executor: Reserve waits until the
// step's action has room (e.g. a free plugin instance) and returns the
// function that gives the room back. The runner reserves before it takes
// one of its own workers, so steps queue behind a busy plugin instead of
// failing with pool_saturated or holding workers other plans could use.
// Called with a context that has already ended, Reserve should not wait:
// it returns room that is free at once, or ctx's error (the runner asks so
// before it runs a step it made ready itself rather than queuing it).
type Reserver interface {
	Reserve(ctx context.Context, call StepCall) (release func(), err error)
}

// StepCall is one run of a step.
type StepCall struct {
	SessionID, PlanID, ExecutionID string
	StepID                         string
	Type                           string // TypeSkill or TypeAgent
	Agent                          string // the agent for TypeAgent
	Action                         string // the skill id
	Input                          json.RawMessage
	// Timeout caps the run; 0 means the action's own limit.
	Timeout time.Duration
	// RequestID attributes the run in logs and errors: "<execution>/<step>".
	// The runner attaches SessionID and RequestID as the run's invocation
	// (auth.Invoke); executors read them from there.
	RequestID string
	// Progress receives the action's progress reports; nil drops them.
	Progress hostfn.ProgressSink
}

// StepOutcome is a successful run.
type StepOutcome struct {
	Output   []byte
	Duration time.Duration
	// Ended is when the run ended; the runner sets it (the step's recorded
	// finish).
	Ended time.Time
	// Peer is the signed result of the remote peer the step delegated to,
	// when an executor calls one: the plan's provenance records it (a peer
	// link), so the chain shows which peer produced the output and the head
	// of the peer's own chain. Optional.
	Peer *provenance.PeerResult
}

// Skills runs skills and describes the loaded plugins (*plugin.Registry).
type Skills interface {
	Execute(ctx context.Context, call plugin.Call) (*plugin.Outcome, error)
	Snapshot() *plugin.Snapshot
}

// LocalExecutor runs steps on this host's plugins. It bounds the steps
// running on one plugin to the plugin's concurrency limit (Reserve). It is
// safe for concurrent use.
type LocalExecutor struct {
	skills Skills
	mu     sync.Mutex
	slots  map[string]chan struct{} // "<plugin>/<concurrency>" -> free slots
}

var (
	_ Executor = (*LocalExecutor)(nil)
	_ Reserver = (*LocalExecutor)(nil)
)

// NewLocalExecutor returns an executor over skills.
func NewLocalExecutor(skills Skills) *LocalExecutor {
	return &LocalExecutor{skills: skills, slots: map[string]chan struct{}{}}
}

// RunStep runs the step's skill through the registry; the host functions
// read the step's session from the invocation on ctx.
func (e *LocalExecutor) RunStep(ctx context.Context, c StepCall) (*StepOutcome, error) {
	ctx = hostfn.WithCall(ctx, &hostfn.Call{Skill: c.Action, Progress: c.Progress})
	out, err := e.skills.Execute(ctx, plugin.Call{SkillID: c.Action, Agent: c.Agent, Input: c.Input, Timeout: c.Timeout})
	if err != nil {
		return nil, err
	}
	return &StepOutcome{Output: out.Output, Duration: out.Duration}, nil
}

// Reserve waits for one of the step's plugin's concurrency slots on this
// host. A step whose skill or agent is not loaded reserves nothing (its run
// then fails with unknown_skill or unknown_agent).
func (e *LocalExecutor) Reserve(ctx context.Context, c StepCall) (func(), error) {
	snap := e.skills.Snapshot()
	var p *plugin.Plugin
	if c.Agent != "" {
		p, _ = snap.Plugin(c.Agent)
	} else {
		p, _, _ = snap.Skill(c.Action)
	}
	if p == nil || p.Limits.Concurrency < 1 {
		return func() {}, nil
	}
	key := p.Manifest.Name + "/" + strconv.Itoa(p.Limits.Concurrency)
	e.mu.Lock()
	slots, ok := e.slots[key]
	if !ok {
		slots = make(chan struct{}, p.Limits.Concurrency)
		e.slots[key] = slots
	}
	e.mu.Unlock()
	select {
	case slots <- struct{}{}: // free now: taken even when ctx has ended
		return func() { <-slots }, nil
	default:
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// retryable reports whether a step that failed with err may run again
// under its retry policy: timeouts, pool saturation and rate limits, or
// whatever an error with a Retryable method says. Traps, plugin errors,
// invalid input and unknown skills are final.
func retryable(err error) bool {
	var r interface{ Retryable() bool }
	if errors.As(err, &r) {
		return r.Retryable()
	}
	fe := fault.From(err)
	switch fe.Kind {
	case fault.Timeout:
		return true
	case fault.ResourceExhausted:
		return fe.Reason == fault.ReasonPoolSaturated || fe.Reason == fault.ReasonRateLimited
	}
	return false
}
