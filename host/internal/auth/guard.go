package auth

import (
	"errors"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/share"
)

// Guard applies the call limits: the call rate (a token bucket per key,
// through a Limiter), the session-creation rate, and the calls running at
// once on this host — every principal together up to the host-wide cap, a
// key at most its MaxConcurrentCalls of them. Local principals have no rate
// and no per-key share; they count against the host-wide cap. Safe for
// concurrent use.
type Guard struct {
	lim     Limiter
	running *share.Counter // calls and A2A tasks running on this host
}

// NewGuard returns a Guard taking tokens from lim (nil: a MemoryLimiter)
// that lets maxRunning calls (and A2A tasks) run at once on this host,
// every principal together (rpc.max_running_calls; at least 1): past it a
// call is refused with pool_saturated.
func NewGuard(lim Limiter, maxRunning int) *Guard {
	if lim == nil {
		lim = NewMemoryLimiter()
	}
	maxRunning = max(maxRunning, 1)
	return &Guard{lim: lim, running: share.New(share.Config{
		Resource: "running_calls", What: "running calls",
		Limit: maxRunning, LimitKey: "rpc.max_running_calls", ShareKey: "auth.limits.max_concurrent_calls",
		Full: fault.Newf(fault.ResourceExhausted, fault.ReasonPoolSaturated,
			"%d calls are running on this host, the limit (rpc.max_running_calls); retry shortly", maxRunning).
			With("retry_after_ms", int64(100)),
	})}
}

// Running counts the calls running on this host (for metrics and admin).
func (g *Guard) Running() *share.Counter { return g.running }

// Admit takes a rate token for one call of p and a slot among p's running
// calls; release frees the slot when the call ends. Refusals are
// ResourceExhausted (rate_limited for p's rate or share, pool_saturated
// for the host-wide cap) with retry_after_ms in their data.
func (g *Guard) Admit(p Principal) (release func(), err error) {
	release, err = g.Occupy(p)
	if err != nil {
		return nil, err
	}
	if err := g.AdmitRate(p); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

// Occupy takes a slot among the host's running calls (or tasks) until
// release: one of p's MaxConcurrentCalls for a key (rate_limited when they
// are running already), and one of the host's (pool_saturated when
// rpc.max_running_calls are running).
func (g *Guard) Occupy(p Principal) (release func(), err error) {
	holder, n := "", 0
	if p.Limited() {
		holder, n = p.Owner(), p.Limits().MaxConcurrentCalls
	}
	release, err = g.running.AcquireWithin(holder, n)
	if errors.Is(err, share.ErrOverShare) {
		return nil, limited(p, "auth.limits.max_concurrent_calls", time.Second,
			"%d calls of this key are already running on this host", n)
	}
	return release, err
}

// AdmitRate takes a rate token for one call of p, without a running slot
// (for calls whose work takes its own slot, see StartsTask).
func (g *Guard) AdmitRate(p Principal) error {
	if !p.Limited() {
		return nil
	}
	return g.take("calls:"+p.name, p.Limits().Rate, "call", "auth.limits.rate")
}

// AdmitSession takes a session-creation token of p.
func (g *Guard) AdmitSession(p Principal) error {
	if !p.Limited() {
		return nil
	}
	return g.take("sessions:"+p.name, p.Limits().SessionRate, "session-creation", "auth.limits.session_rate")
}

// take takes a token from bucket; what names the rate in the message and
// limit its configuration key in the error data.
func (g *Guard) take(bucket string, r Rate, what, limit string) error {
	ok, wait := g.lim.Take(bucket, r)
	if ok {
		return nil
	}
	return fault.Newf(fault.ResourceExhausted, fault.ReasonRateLimited, "this key's %s rate (%s) is used up; retry in %s", what, r, wait.Round(10*time.Millisecond)).
		With("limit", limit).With("rate", r.String()).With("retry_after_ms", max(wait.Milliseconds(), 1))
}

func limited(p Principal, limit string, wait time.Duration, format string, args ...any) *fault.Error {
	return fault.Newf(fault.ResourceExhausted, fault.ReasonRateLimited, format, args...).
		With("limit", limit).With("key_id", p.KeyID()).With("retry_after_ms", wait.Milliseconds())
}

// RetryAfter reads the retry_after_ms data of a rate_limited error (0 when
// there is none).
func RetryAfter(err error) time.Duration {
	fe := fault.From(err)
	if fe == nil || fe.Reason != fault.ReasonRateLimited {
		return 0
	}
	switch v := fe.Data["retry_after_ms"].(type) {
	case int64:
		return time.Duration(v) * time.Millisecond
	case int:
		return time.Duration(v) * time.Millisecond
	case float64:
		return time.Duration(v * float64(time.Millisecond))
	}
	return 0
}
