package auth

import (
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// Guard applies the per-principal call limits: the call rate (a token
// bucket per key, through a Limiter), the session-creation rate and the
// number of calls running at once on this host. Local principals are not
// limited. Safe for concurrent use.
type Guard struct {
	lim Limiter

	mu      sync.Mutex
	running map[string]int // key id -> calls running here
}

// NewGuard returns a Guard taking tokens from lim (nil: a MemoryLimiter).
func NewGuard(lim Limiter) *Guard {
	if lim == nil {
		lim = NewMemoryLimiter()
	}
	return &Guard{lim: lim, running: map[string]int{}}
}

// Admit takes a rate token for one call of p and a slot among p's running
// calls; release frees the slot when the call ends. Refusals are
// ResourceExhausted (rate_limited) with retry_after_ms in their data.
func (g *Guard) Admit(p Principal) (release func(), err error) {
	if !p.Limited() {
		return func() {}, nil
	}
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

// Occupy takes a slot among p's running calls (or tasks) until release;
// it fails (rate_limited) when MaxConcurrentCalls are running already.
func (g *Guard) Occupy(p Principal) (release func(), err error) {
	n := p.Limits().MaxConcurrentCalls
	if !p.Limited() || n <= 0 {
		return func() {}, nil
	}
	g.mu.Lock()
	if g.running[p.name] >= n {
		g.mu.Unlock()
		return nil, limited(p, "auth.limits.max_concurrent_calls", time.Second,
			"%d calls of this key are already running on this host", n)
	}
	g.running[p.name]++
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.running[p.name]--; g.running[p.name] <= 0 {
				delete(g.running, p.name)
			}
			g.mu.Unlock()
		})
	}, nil
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
