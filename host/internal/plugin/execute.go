package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// maxListed caps the skill or agent ids listed in an unknown_skill or
// unknown_agent error.
const maxListed = 20

// Call is one skill invocation.
type Call struct {
	SkillID string
	// Agent, when set, names the plugin the skill must belong to
	// (agent/call): an unknown plugin is AgentNotFound/unknown_agent, a skill
	// it does not have is InvalidParams/unknown_skill.
	Agent string
	// Input is the JSON input; empty means {}. It must be valid JSON.
	Input json.RawMessage
	// Timeout caps this call; 0 means the skill's limit. The effective
	// deadline is the smaller of the two (the sandbox sets it).
	Timeout time.Duration
	// FollowUp marks a later turn of a multi-turn A2A task: its input is
	// the caller's answer, not the skill's input, so input_schema (which
	// describes the task's first message) is not applied.
	FollowUp bool
	// InputJSON marks an Input the caller has already decoded as one JSON
	// value (skill/execute's skill_params): a skill without an input_schema
	// then gets it without another scan.
	InputJSON bool
	// Turn, when set, is the A2A task turn the call runs: once the sandbox
	// call returned, Turn.Asked says whether the skill ended its turn
	// asking for input (task_interrupt); it returned no output then, so
	// output_schema is not applied.
	Turn TaskTurn
}

// TaskTurn is a multi-turn task's turn as the registry sees it (hostfn.Task
// implements it): a value passed down and read after the call, never a
// function of a higher layer (TestCallsCarryNoCallbacks).
type TaskTurn interface {
	Asked() bool
}

// Outcome is a successful call's result.
type Outcome struct {
	SkillID         string
	Plugin          string // plugin name
	Version         string // plugin version that served the call
	Output          []byte
	Duration        time.Duration
	MemoryPeakBytes uint64
	Fresh           bool // a new instance was created for the call
}

// Execute runs a skill: it resolves the skill (and agent), checks the
// principal's scopes and takes the skill's policy.skill_rates tokens
// (rate_limited when one is used up), validates the input against the
// skill's input_schema, runs the export under
// min(call.Timeout, skill limit) and validates the output against the
// output_schema. ctx reaches the plugin's host functions: the caller
// attaches what they need (hostfn.WithCall) before calling. Every failure is
// a *fault.Error.
func (r *Registry) Execute(ctx context.Context, call Call) (*Outcome, error) {
	e, sk, err := r.acquire(call)
	if err != nil {
		return nil, err
	}
	defer e.release(ctx)
	start := time.Now()
	ctx, endSpan := r.startSpan(ctx, e.plugin, sk)
	res, ferr := r.execute(ctx, e, sk, call)
	endSpan(res, ferr)
	r.observe(ctx, e.plugin, sk, start, res, ferr)
	if ferr != nil {
		return nil, markReached(ferr, e.plugin, sk)
	}
	p := e.plugin
	return &Outcome{
		SkillID: sk.ID, Plugin: p.Manifest.Name, Version: p.Manifest.Version,
		Output: res.Output, Duration: res.Duration, MemoryPeakBytes: res.MemoryPeakBytes, Fresh: res.Fresh,
	}, nil
}

// execute runs a resolved skill: scope, rate (policy.skill_rates), input
// schema, the sandbox call, the output schema.
func (r *Registry) execute(ctx context.Context, e *entry, sk *Skill, call Call) (*sandbox.Result, *fault.Error) {
	p := e.plugin
	// The principal a transport attached must be granted the skill (a
	// skill: scope, or an agent: scope on the plugin). Calls without one
	// (the devkit, embedding without authorization) are not checked: the
	// host's transports always attach one.
	if auth.Attached(ctx) {
		if err := auth.From(ctx).AllowSkill(p.Manifest.Name, sk.ID); err != nil {
			return nil, annotate(ctx, fault.From(err), call, p)
		}
	}
	// policy.skill_rates: every call of a skill passes here, whatever its
	// way in (skill/execute, agent/call, A2A, MCP, plan steps, agent_call).
	if err := r.takeRate(ctx, sk); err != nil {
		return nil, annotate(ctx, fault.From(err), call, p)
	}
	input, ferr := checkInput(sk, call)
	if ferr != nil {
		return nil, annotate(ctx, ferr, call, p)
	}
	res, err := e.module.Call(ctx, sk.Function, input, sandbox.Within(call.Timeout))
	if err != nil {
		return nil, annotate(ctx, fault.From(err), call, p)
	}
	if sk.output != nil && (call.Turn == nil || !call.Turn.Asked()) {
		if ferr := checkOutput(sk, res.Output); ferr != nil {
			r.log.Warn("plugin: output does not match output_schema", "plugin", p.Manifest.Name, "skill", sk.ID, "error", ferr.Msg)
			return nil, annotate(ctx, ferr, call, p)
		}
	}
	return res, nil
}

// acquire resolves the call's skill in the current state and pins its entry.
func (r *Registry) acquire(call Call) (*entry, *Skill, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, nil, fault.New(fault.Internal, fault.ReasonInternal, "the plugin registry is closed")
	}
	st := r.cur
	var e *entry
	if call.Agent != "" {
		a, ok := st.byName[call.Agent]
		if !ok {
			if l, ok := r.loadingSkill(call.Agent, ""); ok {
				return nil, nil, loadingFault(call.SkillID, l)
			}
			names := make([]string, 0, len(st.snap.Plugins))
			for _, p := range st.snap.Plugins {
				names = append(names, p.Manifest.Name)
			}
			return nil, nil, unknown(fault.AgentNotFound, fault.ReasonUnknownAgent, "agent", call.Agent, names)
		}
		e = a
		if _, ok := a.plugin.Skill(call.SkillID); !ok {
			ids := make([]string, 0, len(a.plugin.Manifest.Skills))
			for _, s := range a.plugin.Manifest.Skills {
				ids = append(ids, s.ID)
			}
			return nil, nil, unknown(fault.InvalidParams, fault.ReasonUnknownSkill, "skill", call.SkillID, ids).
				With("agent_id", call.Agent)
		}
	} else if e = st.bySkill[call.SkillID]; e == nil {
		if l, ok := r.loadingSkill("", call.SkillID); ok {
			return nil, nil, loadingFault(call.SkillID, l)
		}
		return nil, nil, unknown(fault.InvalidParams, fault.ReasonUnknownSkill, "skill", call.SkillID, st.snap.SkillIDs())
	}
	sk, _ := e.plugin.Skill(call.SkillID)
	e.refs.Add(1)
	return e, sk, nil
}

// unknown builds an "unknown X" fault listing (at most maxListed of) the
// available ids.
func unknown(k fault.Kind, reason, what, id string, avail []string) *fault.Error {
	listed, more := avail, 0
	if len(listed) > maxListed {
		listed, more = listed[:maxListed], len(listed)-maxListed
	}
	msg := fmt.Sprintf("unknown %s %q; available: %s", what, truncate(id, 64), strings.Join(listed, ", "))
	if len(avail) == 0 {
		msg = fmt.Sprintf("unknown %s %q; none is loaded", what, truncate(id, 64))
	} else if more > 0 {
		msg += fmt.Sprintf(" (and %d more)", more)
	}
	return fault.New(k, reason, msg).With("available", listed)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// checkInput returns the bytes handed to the plugin: {} for an empty input,
// else the input itself once it is known to be JSON matching the schema.
func checkInput(sk *Skill, call Call) ([]byte, *fault.Error) {
	in, followUp := call.Input, call.FollowUp
	if len(bytes.TrimSpace(in)) == 0 {
		in = json.RawMessage("{}")
	}
	if (sk.input == nil || followUp) && (call.InputJSON || json.Valid(in)) { // no schema: at most a scan, nothing decoded
		return in, nil
	}
	doc, err := decodeJSON(in)
	if err != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "skill %s: input is not valid JSON: %v", sk.ID, err)
	}
	if sk.input != nil {
		if err := sk.input.Validate(doc); err != nil {
			return nil, fault.New(fault.InvalidParams, fault.ReasonSchema,
				fmt.Sprintf("skill %s: input does not match input_schema: %s", sk.ID, schemaMessage(err))).
				With("pointer", schemaPointer(err))
		}
	}
	return in, nil
}

// checkOutput validates the output against the output_schema.
func checkOutput(sk *Skill, out []byte) *fault.Error {
	doc, err := decodeJSON(out)
	if err != nil {
		return fault.New(fault.SkillFailed, fault.ReasonOutputSchema,
			fmt.Sprintf("skill %s: output is not JSON, but the skill declares an output_schema", sk.ID))
	}
	if err := sk.output.Validate(doc); err != nil {
		return fault.New(fault.SkillFailed, fault.ReasonOutputSchema,
			fmt.Sprintf("skill %s: output does not match output_schema: %s", sk.ID, schemaMessage(err))).
			With("pointer", schemaPointer(err))
	}
	return nil
}

// annotate adds attribution to an error's data: the skill, the plugin, and
// the session and request id of the call's invocation.
func annotate(ctx context.Context, fe *fault.Error, call Call, p *Plugin) *fault.Error {
	fe = fe.With("skill_id", call.SkillID).With("plugin", p.Manifest.Name)
	inv := auth.InvocationFrom(ctx)
	if inv.SessionID != "" {
		fe = fe.With("session_id", inv.SessionID)
	}
	if inv.RequestID != "" {
		fe = fe.With("request_id", inv.RequestID)
	}
	return fe
}
