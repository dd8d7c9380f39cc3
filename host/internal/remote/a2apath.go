package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/skillhost/skillhost/host/fault"
)

// Polling of a task the peer returned before it ended.
const (
	pollFirst = 100 * time.Millisecond
	pollMax   = time.Second
)

// callA2A sends c as an A2A SendMessage (skill routing in
// message.metadata.skillId; tenant, when set, restricts it to one agent of
// the peer) with the official a2a-go v2 client over iface, and waits for
// the task to end (blocking send, then GetTask polls if the peer answers
// early). With stream (the call has a progress sink and the peer's card
// says it streams), it is SendStreamingMessage instead, and the peer's
// progress reaches c.Progress while the task runs (progress.go).
func (p *peer) callA2A(ctx context.Context, iface *a2av1.AgentInterface, headers []header, c Call, tenant string, stream bool) (*answer, error) {
	var opt a2aclient.FactoryOption
	if iface.ProtocolVersion == a2av0.Version {
		opt = a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: p.client})
	} else {
		opt = a2aclient.WithJSONRPCTransport(p.client)
	}
	client, err := a2aclient.NewFromEndpoints(ctx, []*a2av1.AgentInterface{iface}, a2aclient.WithDefaultsDisabled(), opt)
	if err != nil {
		return nil, fail(unusable, unavailable(p.cfg.ID, "no A2A client for its interface: %v", err))
	}
	defer client.Destroy()
	params := a2aclient.ServiceParams{}
	for _, h := range headers {
		params.Append(h.name, h.value)
	}
	ctx = a2aclient.AttachServiceParams(ctx, params)
	input, err := decodeInput(c.Input)
	if err != nil {
		return nil, fail(final, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "remote agent %q: params are not JSON: %v", p.cfg.ID, err))
	}
	msg := a2av1.NewMessage(a2av1.MessageRoleUser, a2av1.NewDataPart(input))
	msg.Metadata = map[string]any{"skillId": c.Method}
	req := &a2av1.SendMessageRequest{Message: msg, Tenant: tenant}
	var res a2av1.SendMessageResult
	if stream && c.Progress != nil {
		res, err = p.streamA2A(ctx, client, req, c.Progress)
	} else {
		x := &exchange{}
		if res, err = client.SendMessage(withExchange(ctx, x), req); err != nil {
			err = p.a2aFailure(x, err)
		}
	}
	if err != nil {
		return nil, err
	}
	return p.await(ctx, client, res, c.Method)
}

// await polls a task the peer returned before it ended (GetTask, backing
// off) and turns the ended task, or a message, into the answer.
func (p *peer) await(ctx context.Context, client *a2aclient.Client, res a2av1.SendMessageResult, method string) (*answer, error) {
	wait := pollFirst
	for {
		task, ok := res.(*a2av1.Task)
		if !ok || ended(task.Status.State) {
			return p.resultAnswer(res, method)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait = min(2*wait, pollMax)
		x := &exchange{}
		got, err := client.GetTask(withExchange(ctx, x), &a2av1.GetTaskRequest{ID: task.ID})
		if err != nil {
			return nil, p.a2aFailure(x, err)
		}
		res = got
	}
}

// ended reports a state a call waits no longer for: terminal, or
// interrupted (agent/call cannot give input or credentials).
func ended(s a2av1.TaskState) bool {
	return s.Terminal() || s == a2av1.TaskStateInputRequired || s == a2av1.TaskStateAuthRequired
}

// a2aFailure classifies a failed a2a-go client call from what the exchange
// saw: the body cap, no response (a transport failure), an HTTP status or a
// JSON-RPC error in the body; else the client's refusal of the answer.
func (p *peer) a2aFailure(x *exchange, err error) *failure {
	status, body, tooLarge := x.snapshot()
	switch {
	case tooLarge:
		return transportFailure(p.cfg.ID, errTooLarge)
	case status == 0:
		return transportFailure(p.cfg.ID, err)
	}
	if f := responseFailure(p.cfg.ID, status, body); f != nil {
		return f
	}
	return invalidAnswer(p.cfg.ID, "its A2A answer was refused by the client: %s", truncate(err.Error(), 200))
}

// responseFailure classifies an HTTP response that is not a JSON-RPC
// success: a 5xx or 429, an error response, another status. nil when body
// is a 200 result.
func responseFailure(id string, status int, body []byte) *failure {
	var r rpcResponse
	decoded := json.Unmarshal(body, &r) == nil && r.JSONRPC == "2.0"
	switch {
	case status >= 500 || status == http.StatusTooManyRequests:
		return statusFailure(id, status)
	case decoded && r.Error != nil:
		return peerError(id, fault.Decode(r.Error.Code, r.Error.Message, r.Error.Data))
	case status != http.StatusOK:
		return statusFailure(id, status)
	}
	return nil
}

// resultAnswer turns an ended task (or a message) into the call's output:
// a completed task's artifacts, a message's parts. Other end states fail.
func (p *peer) resultAnswer(res a2av1.SendMessageResult, method string) (*answer, error) {
	id := p.cfg.ID
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, invalidAnswer(id, "its result does not encode: %v", err)
	}
	var parts a2av1.ContentParts
	switch r := res.(type) {
	case *a2av1.Message:
		parts = r.Parts
	case *a2av1.Task:
		state, why := r.Status.State, statusText(r.Status.Message)
		switch state {
		case a2av1.TaskStateCompleted:
			for _, a := range r.Artifacts {
				if a != nil {
					parts = append(parts, a.Parts...)
				}
			}
		case a2av1.TaskStateRejected:
			return nil, fail(final, fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams,
				"remote agent %q rejected %s: %s", id, method, why).With("agent_id", id).With("task_state", string(state)))
		case a2av1.TaskStateCanceled:
			return nil, fail(final, fault.Newf(fault.Canceled, fault.ReasonCanceled,
				"remote agent %q canceled %s: %s", id, method, why).With("agent_id", id).With("task_state", string(state)))
		case a2av1.TaskStateAuthRequired:
			return nil, fail(unusable, unavailable(id, "its task asks for authentication: %s", why).With("task_state", string(state)))
		default: // failed, input-required (agent/call cannot give input)
			return nil, fail(final, fault.Newf(fault.SkillFailed, fault.ReasonSkillFailed,
				"remote agent %q: %s ended %s: %s", id, method, state, why).With("agent_id", id).With("task_state", string(state)))
		}
	default:
		return nil, invalidAnswer(id, "SendMessage answered neither a task nor a message")
	}
	out, err := partsValue(parts)
	if err != nil {
		return nil, invalidAnswer(id, "its output does not encode: %v", err)
	}
	return &answer{output: out, raw: raw}, nil
}

// partsValue is the JSON value of a result's parts: one data part is its
// value, text parts are one string, several data parts (or a mix) an array
// of their values; no parts is null.
func partsValue(parts a2av1.ContentParts) (json.RawMessage, error) {
	var values []any
	var texts []string
	for _, part := range parts {
		if part == nil {
			continue
		}
		switch v := part.Content.(type) {
		case a2av1.Data:
			values = append(values, v.Value)
		case a2av1.Text:
			texts = append(texts, string(v))
			values = append(values, string(v))
		}
	}
	switch {
	case len(values) == 0:
		return json.RawMessage("null"), nil
	case len(texts) == len(values):
		return json.Marshal(strings.Join(texts, ""))
	case len(values) == 1:
		return json.Marshal(values[0])
	}
	return json.Marshal(values)
}

// statusText is a status message's text, for error messages.
func statusText(m *a2av1.Message) string {
	if m == nil {
		return "no reason given"
	}
	var b strings.Builder
	for _, part := range m.Parts {
		if part != nil {
			b.WriteString(part.Text())
		}
	}
	if b.Len() == 0 {
		return "no reason given"
	}
	return truncate(b.String(), 500)
}

// decodeInput decodes the call's input ({} when empty) keeping numbers
// exact.
func decodeInput(in json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(inputOrEmpty(in)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
