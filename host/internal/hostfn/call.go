package hostfn

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// Call is the per-call data the host functions need beyond the call's
// identity (auth.InvocationFrom: session, request id, principal). The
// sandbox caller puts it in the context of Module.Call with WithCall; host
// functions read it with CallFrom.
//
// Everything in a Call is a value passed down: what a host function
// reports goes into a value of this package (a ProgressSink the caller
// passes, the Delegations and Task the caller reads once the call
// returned), never into a function of a higher layer
// (TestCallsCarryNoCallbacks in host/internal/archtest).
type Call struct {
	Plugin string // plugin name, for attribution
	Skill  string // skill id, for attribution
	// Progress receives the call's progress reports; nil drops them.
	Progress ProgressSink
	// Delegations, when set, collects the peer result of each agent_call
	// this call makes that a remote peer answers (an A2A task records them
	// in its provenance); set, agent_call asks a signing peer for its
	// signed task. nil: none are kept.
	Delegations *Delegations
	// Session, when the invocation has no session, opens the calling
	// session on the first use of a context function (an A2A context's
	// session is created only when a skill uses it); nil: no session.
	Session SessionOpener
	// Task is the A2A task this call runs a turn of: task_history reads
	// its messages, task_interrupt records that the turn ends asking for
	// input. nil: the call is not a task turn (both functions refuse with
	// CodeNotATask).
	Task *Task

	mu     sync.Mutex
	opened string // the session Session opened
}

// ProgressSink receives a call's progress reports, on the plugin's call:
// it must not block for long.
type ProgressSink interface {
	Progress(Progress)
}

// SessionOpener opens (or finds) the session of a call made without one,
// as the principal on ctx.
type SessionOpener interface {
	OpenSession(ctx context.Context) (string, error)
}

// Delegations are the peer results of a call's agent_calls that remote
// peers answered, in the order they came. Safe for concurrent use; the zero
// value is empty.
type Delegations struct {
	mu    sync.Mutex
	peers []*provenance.PeerResult
}

func (d *Delegations) add(p *provenance.PeerResult) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.peers = append(d.peers, p)
}

// List returns the peer results collected so far.
func (d *Delegations) List() []*provenance.PeerResult {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*provenance.PeerResult(nil), d.peers...)
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

// sessionID is the calling session: the invocation's, else the one
// Session opened (if it did).
func (c *Call) sessionID(ctx context.Context) string {
	if id := auth.InvocationFrom(ctx).SessionID; id != "" {
		return id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened
}

// SessionOf is the calling session of the call on ctx: its invocation's,
// else the one its Call's Session opened (an A2A context's); "" for none.
func SessionOf(ctx context.Context) string { return CallFrom(ctx).sessionID(ctx) }
