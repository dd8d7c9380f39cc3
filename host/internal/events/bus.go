package events

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/share"
	"github.com/skillhost/skillhost/host/internal/store"
)

// Event types.
const (
	PlanStarted       = "plan.started"
	PlanStepStarted   = "plan.step.started"
	PlanStepProgress  = "plan.step.progress"
	PlanStepRetrying  = "plan.step.retrying"
	PlanStepCompleted = "plan.step.completed"
	PlanStepFailed    = "plan.step.failed"
	PlanCompleted     = "plan.completed"
	PlanFailed        = "plan.failed"
	PlanCancelled     = "plan.cancelled"
	AgentNotify       = "agent.notify"
)

// Event is one event on the bus.
type Event struct {
	// Seq is the stream sequence: the event's id for subscribers. Set on
	// events a Subscription returns; ignored by Publish.
	Seq uint64
	// ID is the dedupe id: a second Publish with the same ID within the
	// dedupe window is dropped. "" = never deduplicated.
	ID string
	// Type is one of the event type constants.
	Type string
	// Owner is the owner of what the event is about (auth.Principal.Owner:
	// the session's owner, or the notifying principal's); subscribers see
	// only their own. Not sent to subscribers.
	Owner string
	// SessionID is the session the event belongs to ("" = none).
	SessionID string
	// PlanID is the plan the event is about ("" = none).
	PlanID string
	// Time is when it happened; Publish sets it when zero.
	Time time.Time
	// Data is the event's payload: a JSON object.
	Data json.RawMessage
}

// envelope is the stored (and sent) form of an event.
type envelope struct {
	ID        string          `json:"id,omitempty"` // the sequence, set when sent
	Type      string          `json:"type"`
	Time      string          `json:"time"`
	SessionID string          `json:"session_id,omitempty"`
	PlanID    string          `json:"plan_id,omitempty"`
	Data      json.RawMessage `json:"data"`
}

// subscriberBuffer caps the bytes one subscription buffers ahead of its
// reader (at least a few of the largest events).
const subscriberBuffer = 1 << 20

// timeFormat is the wire timestamp format (milliseconds, UTC).
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// Bus publishes and replays events. It is safe for concurrent use.
type Bus struct {
	cfg  Config
	log  *store.Log
	subs *share.Counter // open subscriptions: MaxSubscribers, MaxSubscribersPerKey each
}

// Open creates or updates the events stream on st (a store.Log: the
// store's replicas, retried while JetStream is slow to answer) under the
// events.* section cfg.
func Open(ctx context.Context, st *store.Store, cfg Config) (*Bus, error) {
	cfg, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	log, err := st.OpenLog(ctx, store.LogConfig{
		Name:          Stream,
		Description:   "skillhost events: plan progress and agent notifications",
		Subjects:      []string{SubjectBase + ".>"},
		MaxAge:        cfg.Retention,
		MaxBytes:      int64(cfg.MaxBytes),
		MaxEntryBytes: MaxEventBytes,
		Dedupe:        cfg.DedupeWindow,
	})
	if err != nil {
		return nil, fmt.Errorf("events: open stream %s: %w", Stream, err)
	}
	return &Bus{cfg: cfg, log: log, subs: share.New(share.Config{
		Resource: "events_streams", What: "GET /events streams",
		Limit: cfg.MaxSubscribers, LimitKey: "events.max_subscribers",
		Share: cfg.MaxSubscribersPerKey, ShareKey: "events.max_subscribers_per_key",
		Full: fault.Newf(fault.ResourceExhausted, fault.ReasonTooManySubscribers,
			"%d event subscriptions are open on this host, the limit (events.max_subscribers)", cfg.MaxSubscribers),
		Over: fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this key holds %d GET /events streams, its share of this host (events.max_subscribers_per_key); close one first", cfg.MaxSubscribersPerKey),
	})}, nil
}

// Subscribers counts the open subscriptions (for metrics and admin).
func (b *Bus) Subscribers() *share.Counter { return b.subs }

// token encodes a subject token: base64url of s, "_" for "".
func token(s string) string {
	if s == "" {
		return "_"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

// Publish stores e. It reports duplicate when e.ID was published within the
// dedupe window (the event is then not stored again).
func (b *Bus) Publish(ctx context.Context, e Event) (duplicate bool, err error) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("{}")
	}
	body, err := json.Marshal(envelope{Type: e.Type, Time: e.Time.UTC().Format(timeFormat), SessionID: e.SessionID, PlanID: e.PlanID, Data: e.Data})
	if err != nil {
		return false, fmt.Errorf("events: encode %s: %w", e.Type, err)
	}
	if len(body) > MaxEventBytes {
		return false, fmt.Errorf("events: %s event is %d bytes, over the %d-byte limit", e.Type, len(body), MaxEventBytes)
	}
	subject := SubjectBase + "." + token(e.Owner) + "." + token(e.SessionID) + "." + token(e.PlanID) + "." + e.Type
	_, dup, err := b.log.Append(ctx, store.LogEntry{Subject: subject, ID: e.ID, Data: body})
	if err != nil {
		return false, fmt.Errorf("events: publish %s: %w", e.Type, err)
	}
	return dup, nil
}

// Filter selects the events of a subscription.
type Filter struct {
	// Owners limits the subscription to events of these owners ("" is a
	// valid owner: records made before owners existed); nil means every
	// owner.
	Owners []string
	// SessionID limits the subscription to one session; "" means every
	// session.
	SessionID string
	// PlanID limits it to one plan of the session (needs SessionID).
	PlanID string
	// After resumes after this event id; 0 starts with the next new event.
	After uint64
	// Replay starts with the oldest retained event (After is then ignored).
	Replay bool
	// Holder is who holds the subscription, for the per-key share
	// (Config.MaxSubscribersPerKey): the subscriber's owner; "" counts
	// against the host-wide cap only.
	Holder string
}

// subjects are the filter's subject patterns: owner, session, plan, then
// the type (which has dots, hence ">").
func (f Filter) subjects() []string {
	session, plan := "*", "*"
	if f.SessionID != "" {
		session = token(f.SessionID)
		if f.PlanID != "" {
			plan = token(f.PlanID)
		}
	}
	owners := []string{"*"}
	if f.Owners != nil {
		owners = owners[:0]
		for _, o := range f.Owners {
			owners = append(owners, token(o))
		}
	}
	out := make([]string, 0, len(owners))
	for _, o := range owners {
		out = append(out, SubjectBase+"."+o+"."+session+"."+plan+".>")
	}
	return out
}

// Subscription delivers the events of a Filter in stream order. It is not
// safe for concurrent use; Close it when done.
type Subscription struct {
	release func() // the subscription's unit of Bus.subs
	r       *store.LogReader
	done    atomic.Bool
}

// Subscribe opens a subscription. More than MaxSubscribers open at once on
// this host is ResourceExhausted (too_many_subscribers); more than
// MaxSubscribersPerKey of f.Holder is ResourceExhausted (key_quota).
func (b *Bus) Subscribe(ctx context.Context, f Filter) (*Subscription, error) {
	if f.Owners != nil && len(f.Owners) == 0 {
		return nil, errors.New("events: a filter with an empty owner list matches nothing")
	}
	release, err := b.subs.Acquire(f.Holder)
	if err != nil {
		return nil, err
	}
	o := store.ReadOptions{Subjects: f.subjects(), New: true, BufferBytes: subscriberBuffer}
	switch {
	case f.Replay:
		o.New = false
	case f.After > 0:
		o.After = f.After
	}
	r, err := b.log.Read(ctx, o)
	if err != nil {
		release()
		return nil, fmt.Errorf("events: subscribe: %w", err)
	}
	return &Subscription{release: release, r: r}, nil
}

// Next returns the next event, waiting until there is one or ctx ends
// (Canceled once the subscription is closed).
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		e, err := s.r.Next(ctx)
		if errors.Is(err, store.ErrLogClosed) {
			return Event{}, context.Canceled
		}
		if err != nil {
			return Event{}, err
		}
		if ev, ok := decode(e); ok {
			return ev, nil
		}
	}
}

// decode turns a stored entry into an Event; malformed ones are skipped.
func decode(e store.LogEntry) (Event, bool) {
	var env envelope
	if json.Unmarshal(e.Data, &env) != nil {
		return Event{}, false
	}
	t, _ := time.Parse(timeFormat, env.Time)
	return Event{Seq: e.Seq, Type: env.Type, SessionID: env.SessionID, PlanID: env.PlanID, Time: t, Data: env.Data}, true
}

// Close ends the subscription and frees its slot.
func (s *Subscription) Close() error {
	if s.done.CompareAndSwap(false, true) {
		_ = s.r.Close()
		s.release()
	}
	return nil
}

// SSE renders e as one Server-Sent Events frame: id, event and one data
// line holding the envelope (JSON never contains a raw newline).
func (e Event) SSE() []byte {
	id := strconv.FormatUint(e.Seq, 10)
	body, _ := json.Marshal(envelope{ID: id, Type: e.Type, Time: e.Time.UTC().Format(timeFormat), SessionID: e.SessionID, PlanID: e.PlanID, Data: e.Data})
	out := make([]byte, 0, len(body)+len(e.Type)+len(id)+24)
	out = append(out, "id: "...)
	out = append(out, id...)
	out = append(out, "\nevent: "...)
	out = append(out, e.Type...)
	out = append(out, "\ndata: "...)
	out = append(out, body...)
	return append(out, "\n\n"...)
}
