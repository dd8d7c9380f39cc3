package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// Caps on a notification.
const (
	MaxDataBytes  = 64 << 10 // data, as JSON
	MaxEventBytes = 256      // the event name
	MaxIDBytes    = 128      // the notification id (the envelope request_id)
	maxTargetLen  = 256
)

// Bus records notifications (*events.Bus).
type Bus interface {
	Publish(ctx context.Context, e events.Event) (duplicate bool, err error)
}

// Agents delivers events to plugins (*plugin.Registry).
type Agents interface {
	DeliverEvent(ctx context.Context, call plugin.EventCall) (bool, error)
}

// Deps are the collaborators of a Service.
type Deps struct {
	Bus    Bus          // required
	Agents Agents       // required
	Logger *slog.Logger // Optional. Default: slog.Default().
}

// Service delivers notifications. It is safe for concurrent use.
type Service struct {
	bus    Bus
	agents Agents
	log    *slog.Logger
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	return &Service{bus: d.Bus, agents: d.Agents, log: d.Logger}
}

// Notification is one agent/notify. The caller has checked the session
// (it belongs to Owner) and that Owner may reach Target.
type Notification struct {
	// ID identifies the notification (the envelope's request_id): a second
	// notification with the same ID, owner, session and target within the
	// dedupe window is dropped. "" generates one (never deduplicated).
	ID string
	// Owner is who sent it (auth.Principal.Owner): only its subscribers see
	// it on GET /events.
	Owner     string
	SessionID string
	Target    string // target_agent_id ("" = none: recorded, not delivered)
	Event     string
	Data      json.RawMessage
}

// Result is what happened to a notification.
type Result struct {
	NotificationID string       `json:"notification_id"`
	Status         string       `json:"status"`    // "accepted" or "duplicate"
	Delivered      bool         `json:"delivered"` // the target's events export ran successfully
	Error          *DeliveryErr `json:"delivery_error,omitempty"`
}

// DeliveryErr is why the target's events export failed: the error's
// fault.Summary {code, reason, kind, message}.
type DeliveryErr = fault.Summary

// payload is the event handed to a plugin's events export (and the data of
// the agent.notify event on the bus).
type payload struct {
	ID        string          `json:"id"`
	Event     string          `json:"event"`
	SessionID string          `json:"session_id,omitempty"`
	Target    string          `json:"target_agent_id,omitempty"`
	Data      json.RawMessage `json:"data"`
	Timestamp string          `json:"timestamp"`
}

// Notify validates n, records it and delivers it to its target's events
// export when there is one. Invalid notifications are InvalidParams; a
// failure to record is returned as an error (nothing was delivered); a
// failing export is reported in the Result, never retried.
func (s *Service) Notify(ctx context.Context, n Notification) (*Result, error) {
	if err := validate(&n); err != nil {
		return nil, err
	}
	dedupe := ""
	if n.ID == "" {
		n.ID = newID()
	} else {
		enc := base64.RawURLEncoding
		dedupe = "notify/" + enc.EncodeToString([]byte(n.Owner)) + "/" + enc.EncodeToString([]byte(n.SessionID)) + "/" +
			enc.EncodeToString([]byte(n.Target)) + "/" + n.ID
	}
	body, _ := json.Marshal(payload{ID: n.ID, Event: n.Event, SessionID: n.SessionID, Target: n.Target, Data: n.Data,
		Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")}) // validated parts only: never fails
	dup, err := s.bus.Publish(ctx, events.Event{ID: dedupe, Type: events.AgentNotify, Owner: n.Owner, SessionID: n.SessionID, Data: body})
	if err != nil {
		return nil, fault.Wrap(fault.Internal, fault.ReasonInternal, err, "recording the notification failed")
	}
	res := &Result{NotificationID: n.ID, Status: "accepted"}
	if dup {
		res.Status = "duplicate"
		s.log.Info("agent event: duplicate dropped", "notification_id", n.ID, "session_id", n.SessionID, "target_agent_id", n.Target)
		return res, nil
	}
	if n.Target == "" {
		return res, nil
	}
	// the delivery runs as the notification: its session, its id
	inv := auth.InvocationFrom(ctx)
	inv.SessionID, inv.RequestID = n.SessionID, n.ID
	cctx := hostfn.WithCall(auth.Invoke(ctx, inv), &hostfn.Call{Plugin: n.Target, Skill: "events"})
	ok, err := s.agents.DeliverEvent(cctx, plugin.EventCall{Agent: n.Target, Input: body})
	fe := fault.From(err)
	switch {
	case err != nil && fe.Kind == fault.AgentNotFound:
		// Events may be addressed to agents this host does not run.
		s.log.Info("agent event: no local agent", "event", n.Event, "target_agent_id", n.Target, "session_id", n.SessionID)
	case err != nil:
		sum := fe.Summary()
		res.Error = &sum
		s.log.Warn("agent event: the plugin's events export failed", "target_agent_id", n.Target, "notification_id", n.ID,
			"reason", fe.WireReason(), "err", fe.Message())
	case !ok:
		s.log.Info("agent event: the plugin takes no events", "event", n.Event, "target_agent_id", n.Target)
	default:
		res.Delivered = true
	}
	return res, nil
}

func validate(n *Notification) error {
	bad := func(field, msg string) error {
		return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, field+" "+msg).With("field", field)
	}
	switch {
	case n.Event == "":
		return bad("event", "is required")
	case !printable(n.Event, MaxEventBytes):
		return bad("event", fmt.Sprintf("must be at most %d bytes of printable UTF-8", MaxEventBytes))
	case !printable(n.Target, maxTargetLen):
		return bad("target_agent_id", fmt.Sprintf("must be at most %d bytes of printable UTF-8", maxTargetLen))
	case !printable(n.ID, MaxIDBytes):
		return bad("request_id", fmt.Sprintf("must be at most %d bytes of printable UTF-8 to identify a notification", MaxIDBytes))
	}
	n.Data = bytes.TrimSpace(n.Data)
	if len(n.Data) == 0 {
		n.Data = json.RawMessage("null")
	}
	if len(n.Data) > MaxDataBytes {
		return bad("data", fmt.Sprintf("is %d bytes, over the %d-byte limit", len(n.Data), MaxDataBytes))
	}
	return nil
}

func printable(s string, max int) bool {
	if len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "ntf_" + hex.EncodeToString(b[:])
}
