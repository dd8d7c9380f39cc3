package hostfn

import (
	"context"
	"encoding/json"

	"github.com/skillhost/skillhost/host/internal/provenance"
)

// Call is the per-call data the host functions need. The sandbox caller puts
// it in the context of Module.Call with WithCall; host functions read it with
// CallFrom. A Call is read-only once attached.
type Call struct {
	SessionID string         // calling session ("" = none: context functions refuse)
	Plugin    string         // plugin name, for attribution
	Skill     string         // skill id, for attribution
	RequestID string         // JSON-RPC / A2A request id, for attribution
	Progress  func(Progress) // receives progress reports; nil drops them
	// Delegated receives the peer result of each agent_call this call makes
	// that a remote peer answers (an A2A task records them in its
	// provenance); set, agent_call asks a signing peer for its signed task.
	// nil: none are kept.
	Delegated func(*provenance.PeerResult)
	// Session, when SessionID is empty, resolves the calling session on
	// the first use of a context function (an A2A context's session is
	// created only when a skill uses it); nil: no session.
	Session func(ctx context.Context) (string, error)
	// Task is the A2A task this call runs a turn of: task_history reads
	// its messages, task_interrupt records that the turn ends asking for
	// input. nil: the call is not a task turn (both functions refuse with
	// CodeNotATask).
	Task *Task
}

// Progress is one progress report from a plugin.
type Progress struct {
	Percent float64         `json:"percent"`        // clamped to [0, 100]
	Message string          `json:"message"`        // capped at MaxProgressMessage bytes
	Data    json.RawMessage `json:"data,omitempty"` // capped at MaxProgressData bytes
}

type callKey struct{}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c *Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the Call carried by ctx, or an empty Call (never nil).
func CallFrom(ctx context.Context) *Call {
	if c, ok := ctx.Value(callKey{}).(*Call); ok && c != nil {
		return c
	}
	return &Call{}
}
