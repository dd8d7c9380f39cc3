package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/cenkalti/backoff/v5"
	"github.com/sony/gobreaker/v2"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// Call is one call to a remote agent.
type Call struct {
	ID     string          // the remote agent (agents.remote[].id)
	Method string          // the skill id
	Input  json.RawMessage // JSON input; empty means {}
	// Timeout caps the call (attempts and waits); the peer's timeout and
	// the context's deadline cap it too. 0: the peer's timeout.
	Timeout   time.Duration
	SessionID string // the calling session: its peer session (skillhost peers)
	RequestID string // for logs
	Depth     int    // the call's depth, sent in DepthHeader
	// Provenance: the caller records the peer's signed result, so a peer
	// whose card declares the provenance extension is called with A2A
	// SendMessage (its signed task comes back), not agent/call.
	Provenance bool
	// Progress, when set, receives the peer's progress while the call runs:
	// a peer called over A2A whose card says it streams is called with
	// SendStreamingMessage, and its working updates are forwarded (at most
	// hostfn.ProgressRate a second). Optional.
	Progress hostfn.ProgressSink
}

// Interface is the card interface a call went through.
type Interface struct {
	URL, Binding, Version string
	// Extension: skillhost's _cleveragents/agent/call was used (the card
	// declares it); else A2A SendMessage.
	Extension bool
}

// Result is a remote agent's answer.
type Result struct {
	AgentID   string
	Method    string
	Output    json.RawMessage // the result value
	Duration  time.Duration
	Attempts  int
	Interface Interface
	// Raw is the peer's result as it arrived: the agent/call result object
	// or the A2A task (or message), for provenance records.
	Raw json.RawMessage
	// JWKS is the URL of the peer's signing keys its card publishes (the
	// identity extension); "" when it publishes none.
	JWKS string
}

// answer is one successful attempt.
type answer struct {
	output, raw json.RawMessage
	iface       Interface
	jwks        string
}

// peer is one configured remote agent.
type peer struct {
	cfg      peerConfig
	client   *http.Client
	cards    *cards
	sessions *sessions
	breaker  *gobreaker.CircuitBreaker[*answer]
	openedAt atomic.Int64 // unix nanos the breaker last opened
	log      *slog.Logger
	obs      Observer
	bg       context.Context // the Peers' life: breaker events and session closes
}

func (p *peer) breakerSettings() gobreaker.Settings {
	return gobreaker.Settings{
		Name:        p.cfg.ID,
		MaxRequests: uint32(p.cfg.Breaker.HalfOpenProbes),
		Timeout:     p.cfg.Breaker.OpenTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= uint32(p.cfg.Breaker.Failures)
		},
		IsSuccessful: func(err error) bool { return err == nil || classOf(err) == final },
		IsExcluded:   func(err error) bool { return classOf(err) == gone },
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				p.openedAt.Store(time.Now().UnixNano())
			}
			level := slog.LevelWarn
			if to == gobreaker.StateClosed {
				level = slog.LevelInfo
			}
			p.log.Log(p.bg, level, "remote agent: circuit breaker", "agent", name, "from", from.String(), "to", to.String())
			p.obs.BreakerState(name, to.String())
		},
	}
}

// call runs c with retries under the peer's breaker, within the smaller of
// c.Timeout, the peer's timeout and ctx's deadline.
func (p *peer) call(ctx context.Context, c Call) (*Result, error) {
	start := time.Now()
	timeout := p.cfg.Timeout
	if c.Timeout > 0 {
		timeout = min(timeout, c.Timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	expo := backoff.NewExponentialBackOff()
	expo.InitialInterval, expo.MaxInterval = p.cfg.Retry.InitialInterval, p.cfg.Retry.MaxInterval
	expo.Multiplier, expo.RandomizationFactor = 2, 0.5
	attempts := 0
	a, err := backoff.Retry(ctx, func() (*answer, error) {
		attempts++
		a, err := p.guarded(ctx, c)
		if err != nil && classOf(err) != transient {
			return nil, backoff.Permanent(err)
		}
		return a, err
	}, backoff.WithBackOff(expo), backoff.WithMaxTries(uint(p.cfg.Retry.MaxAttempts)),
		backoff.WithMaxElapsedTime(max(time.Until(deadline), time.Nanosecond)), // never wait past the deadline
		backoff.WithNotify(func(err error, wait time.Duration) {
			p.log.Debug("remote agent: retrying", "agent", p.cfg.ID, "attempt", attempts, "wait", wait, "request_id", c.RequestID, "err", err)
		}))
	if err != nil {
		var f *failure
		if !errors.As(err, &f) { // the context ended while waiting
			f = fail(gone, fault.From(err).With("agent_id", p.cfg.ID))
		}
		return nil, &failure{class: f.class, fe: f.fe.With("attempts", attempts)}
	}
	return &Result{AgentID: p.cfg.ID, Method: c.Method, Output: a.output, Duration: time.Since(start),
		Attempts: attempts, Interface: a.iface, Raw: a.raw, JWKS: a.jwks}, nil
}

// guarded runs one attempt through the breaker; an open breaker (or a
// half-open one whose probes are taken) refuses it with circuit_open.
func (p *peer) guarded(ctx context.Context, c Call) (*answer, error) {
	a, err := p.breaker.Execute(func() (*answer, error) { return p.attempt(ctx, c) })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		p.obs.Attempt(p.cfg.ID, "circuit_open")
		var retryIn time.Duration
		if at := p.openedAt.Load(); at != 0 {
			retryIn = time.Until(time.Unix(0, at).Add(p.cfg.Breaker.OpenTimeout))
		}
		return nil, circuitOpen(p.cfg.ID, retryIn)
	}
	return a, err
}

// attempt reads the card when needed, picks the interface and sends the
// call once, within attempt_timeout.
func (p *peer) attempt(ctx context.Context, c Call) (a *answer, err error) {
	actx, cancel := context.WithTimeout(ctx, p.cfg.AttemptTimeout)
	defer cancel()
	defer func() { err = p.settle(ctx, actx, c, err) }()
	card, err := p.cards.get(actx)
	if err != nil {
		return nil, err
	}
	iface, ext := p.choose(card)
	if iface == nil {
		return nil, fail(unusable, unavailable(p.cfg.ID, "its card offers no JSON-RPC 1.0 or 0.3 interface on its url or hosts"))
	}
	headers := p.requestHeaders(card, c.Depth)
	jwks, signs := signingOf(card)
	if ext && !(c.Provenance && signs) {
		a, err = p.callExtension(actx, iface.URL, headers, c)
	} else {
		tenant := ""
		if ext { // a skillhost peer: its agent key is a plugin there, a tenant of A2A
			tenant = p.cfg.Agent
		}
		a, err = p.callA2A(actx, iface, headers, c, tenant, card.Capabilities.Streaming)
	}
	if err != nil {
		return nil, err
	}
	a.iface = Interface{URL: iface.URL, Binding: string(iface.ProtocolBinding), Version: string(iface.ProtocolVersion),
		Extension: ext && !(c.Provenance && signs)}
	a.jwks = jwks
	return a, nil
}

// signingOf reads a card's identity extension (the JWKS URL of the peer's
// keys) and whether it declares the provenance extension (its tasks carry
// signed chains).
func signingOf(card *a2av1.AgentCard) (jwks string, provenance bool) {
	for _, e := range card.Capabilities.Extensions {
		switch e.URI {
		case agentcard.ExtIdentity:
			jwks, _ = e.Params["jwks"].(string)
		case agentcard.ExtProvenance:
			provenance = true
		}
	}
	return jwks, provenance
}

// settle classifies an attempt's error (an ended context wins over what
// the transport made of it), counts it and re-reads the card after a
// failure that may come from it.
func (p *peer) settle(ctx, actx context.Context, c Call, err error) error {
	if err == nil {
		p.obs.Attempt(p.cfg.ID, "success")
		return nil
	}
	var f *failure
	isFailure := errors.As(err, &f)
	if !isFailure || f.class != final {
		if ended := endedFailure(ctx, actx, p.cfg.ID, p.cfg.AttemptTimeout); ended != nil {
			f, isFailure = ended, true
		}
	}
	if !isFailure {
		f = fail(unusable, unavailable(p.cfg.ID, "%v", err))
	}
	if f.class == unusable {
		p.cards.invalidate()
	}
	p.obs.Attempt(p.cfg.ID, outcomeNames[f.class])
	p.log.Debug("remote agent: attempt failed", "agent", p.cfg.ID, "method", c.Method, "request_id", c.RequestID,
		"outcome", outcomeNames[f.class], "reason", f.fe.WireReason(), "err", f.fe.Message())
	return f
}

// outcomeNames label attempt outcomes in metrics and logs.
var outcomeNames = map[class]string{final: "answered_error", transient: "retryable", unusable: "unusable", gone: "caller_gone"}

// choose picks the interface as spec 000's selectInterface does, among the
// card's interfaces this host may reach: JSON-RPC 1.0, else 0.3 (a version
// is compared by major.minor, so "0.3.0" is 0.3). ext reports whether the
// card declares skillhost's extension.
func (p *peer) choose(card *a2av1.AgentCard) (iface *a2av1.AgentInterface, ext bool) {
	reachable := &a2av1.AgentCard{}
	for _, in := range card.SupportedInterfaces {
		if in == nil {
			continue
		}
		u, err := url.Parse(in.URL)
		if err != nil || !p.cfg.reaches(u) {
			continue
		}
		c := *in
		c.ProtocolVersion = a2av1.ProtocolVersion(majorMinor(string(in.ProtocolVersion)))
		reachable.SupportedInterfaces = append(reachable.SupportedInterfaces, &c)
	}
	for _, v := range []string{agentcard.Version10, agentcard.Version03} {
		if iface = agentcard.SelectInterface(reachable, string(a2av1.TransportProtocolJSONRPC), v); iface != nil {
			break
		}
	}
	for _, e := range card.Capabilities.Extensions {
		ext = ext || e.URI == agentcard.ExtCleverAgents
	}
	return iface, ext
}

// majorMinor cuts "0.3.0" to "0.3" (and leaves "1.0" alone).
func majorMinor(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// remainingMS is the time left before ctx's deadline, in milliseconds, less
// a margin so the peer's own timeout answers before this host gives up; 0
// when ctx has no deadline.
func remainingMS(ctx context.Context) int64 {
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	left := time.Until(d)
	left -= min(100*time.Millisecond, left/10)
	return max(left.Milliseconds(), 1)
}

// closeSession closes a peer session this host opened (best effort).
func (p *peer) closeSession(ctx context.Context, sid string) {
	p.cards.mu.Lock()
	card := p.cards.card
	p.cards.mu.Unlock()
	if card == nil {
		return
	}
	iface, ext := p.choose(card)
	if iface == nil || !ext {
		return
	}
	if _, err := p.rpc(ctx, iface.URL, methodSessionClose, map[string]any{"session_id": sid}, p.requestHeaders(card, 0)); err != nil {
		p.log.Debug("remote agent: closing a peer session failed", "agent", p.cfg.ID, "err", err)
	}
}
