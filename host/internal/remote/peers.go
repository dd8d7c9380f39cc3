package remote

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
)

// Observer receives what /metrics counts. Every method must be cheap and
// safe for concurrent use.
type Observer interface {
	// Attempt counts one attempt at agent by outcome: success, retryable,
	// unusable, answered_error, caller_gone, circuit_open.
	Attempt(agent, outcome string)
	// BreakerState records agent's breaker entering state (closed,
	// half-open, open): a transition.
	BreakerState(agent, state string)
}

type nopObserver struct{}

func (nopObserver) Attempt(string, string)      {}
func (nopObserver) BreakerState(string, string) {}

// Options are what agents.remote does not carry.
type Options struct {
	Logger   *slog.Logger  // Optional. Default: discard.
	Observer Observer      // Optional. Default: none.
	Resolver *net.Resolver // resolves peer hosts. Optional. Default: the system's.
	// Getenv reads credentials.key_env. Optional. Default: os.Getenv.
	Getenv func(string) string
}

// Peers are the configured remote agents of this host. Safe for concurrent
// use.
type Peers struct {
	peers  map[string]*peer
	order  []string
	bg     context.Context
	stopBg context.CancelFunc
}

// New validates agents.remote, reads the credentials and builds one client,
// card cache, session map and circuit breaker per peer. Nothing is sent
// until the first call. bg bounds background work (closing evicted peer
// sessions); Close ends it.
func New(bg context.Context, cfgs []config.RemoteAgent, opts Options) (*Peers, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	ps := &Peers{peers: map[string]*peer{}}
	ps.bg, ps.stopBg = context.WithCancel(bg)
	for i, rc := range cfgs {
		pc, err := newPeerConfig(i, rc, opts.Getenv)
		if err != nil {
			ps.stopBg()
			return nil, err
		}
		if ps.peers[pc.ID] != nil {
			ps.stopBg()
			return nil, fmt.Errorf("config agents.remote[%d].id: %q is used twice", i, pc.ID)
		}
		p := &peer{cfg: pc, log: opts.Logger, obs: opts.Observer, bg: ps.bg}
		p.client = newHTTPClient(&p.cfg, opts.Resolver)
		p.cards = &cards{peer: &p.cfg, client: p.client, log: opts.Logger}
		p.sessions = newSessions(ps.bg, pc.MaxSessions, p.closeSession)
		p.breaker = gobreaker.NewCircuitBreaker[*answer](p.breakerSettings())
		ps.peers[pc.ID] = p
		ps.order = append(ps.order, pc.ID)
	}
	return ps, nil
}

// Has reports whether id is a configured remote agent.
func (ps *Peers) Has(id string) bool {
	_, ok := ps.peers[id]
	return ok
}

// Fallbacks are id's fallback agents, in order (nil for an unknown id).
func (ps *Peers) Fallbacks(id string) []string {
	if p := ps.peers[id]; p != nil {
		return p.cfg.Fallback
	}
	return nil
}

// Timeout is id's timeout (0 for an unknown id).
func (ps *Peers) Timeout(id string) time.Duration {
	if p := ps.peers[id]; p != nil {
		return p.cfg.Timeout
	}
	return 0
}

// Call calls the remote agent c.ID: retries, breaker and deadline as the
// package doc says. Failures are *fault.Error values in the chain (and
// Fallible says whether a fallback may be tried).
func (ps *Peers) Call(ctx context.Context, c Call) (*Result, error) {
	p := ps.peers[c.ID]
	if p == nil {
		return nil, fault.Newf(fault.AgentNotFound, fault.ReasonUnknownAgent, "unknown remote agent %q", truncate(c.ID, 64))
	}
	return p.call(ctx, c)
}

// State is a peer's breaker state and the sessions this host holds on it.
type State struct {
	ID       string
	Breaker  string // closed, half-open, open
	Sessions int
}

// Breakers maps every peer to its breaker state (closed, half-open, open).
func (ps *Peers) Breakers() map[string]string {
	out := make(map[string]string, len(ps.peers))
	for id, p := range ps.peers {
		out[id] = p.breaker.State().String()
	}
	return out
}

// States lists every peer's state, in configuration order.
func (ps *Peers) States() []State {
	out := make([]State, 0, len(ps.order))
	for _, id := range ps.order {
		p := ps.peers[id]
		out = append(out, State{ID: id, Breaker: p.breaker.State().String(), Sessions: p.sessions.len()})
	}
	return out
}

// IDs lists the configured remote agents, sorted.
func (ps *Peers) IDs() []string {
	out := append([]string(nil), ps.order...)
	sort.Strings(out)
	return out
}

// Close ends background work and closes the sessions this host holds on
// its peers (best effort, within ctx).
func (ps *Peers) Close(ctx context.Context) error {
	ps.stopBg()
	for _, id := range ps.order {
		p := ps.peers[id]
		p.sessions.wait()
		for _, sid := range p.sessions.cache.Values() {
			if ctx.Err() != nil {
				break
			}
			cctx, cancel := context.WithTimeout(ctx, closeTimeout)
			p.closeSession(cctx, sid)
			cancel()
		}
		p.sessions.cache.Purge() // bg has ended: evictions close nothing more
		p.client.CloseIdleConnections()
	}
	return nil
}
