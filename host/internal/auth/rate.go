package auth

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rate is "N per period", written "100/s", "600/m" or "1000/h". The zero
// Rate is unlimited. A bucket holds N tokens (the burst) and refills at
// N per period.
type Rate struct {
	N      int
	Period time.Duration
}

// ParseRate parses "N/s", "N/m" or "N/h" (N a positive integer); "" is the
// zero (unlimited) Rate.
func ParseRate(s string) (Rate, error) {
	if s == "" {
		return Rate{}, nil
	}
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if !ok || err != nil || n <= 0 || n > 1_000_000 {
		return Rate{}, fmt.Errorf("rate %q: want N/s, N/m or N/h with N between 1 and 1000000", clip(s))
	}
	var per time.Duration
	switch strings.TrimSpace(unit) {
	case "s":
		per = time.Second
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	default:
		return Rate{}, fmt.Errorf("rate %q: the period must be s, m or h", clip(s))
	}
	return Rate{N: n, Period: per}, nil
}

// Unlimited reports whether r is the zero Rate.
func (r Rate) Unlimited() bool { return r.N <= 0 || r.Period <= 0 }

// String is the rate as written in configuration ("" when unlimited).
func (r Rate) String() string {
	if r.Unlimited() {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Period]
	if unit == "" {
		return fmt.Sprintf("%d/%s", r.N, r.Period)
	}
	return fmt.Sprintf("%d/%s", r.N, unit)
}

// Limiter takes tokens from named token buckets. Implementations decide
// where the buckets live: MemoryLimiter keeps them in this process (each
// host of a cluster then limits on its own).
type Limiter interface {
	// Take removes one token from the bucket named bucket, refilled at r,
	// and reports whether there was one; if not, retryAfter is when the
	// next token is due. An unlimited r always succeeds.
	Take(bucket string, r Rate) (ok bool, retryAfter time.Duration)
}

// MemoryLimiter is a Limiter with in-process token buckets
// (golang.org/x/time/rate). Buckets are created on first use and kept: the
// caller names them after configured keys, so their number is bounded by
// the configuration. Safe for concurrent use.
type MemoryLimiter struct {
	mu      sync.Mutex
	buckets map[string]*memBucket
	now     func() time.Time
}

type memBucket struct {
	r   Rate
	lim *rate.Limiter
}

// NewMemoryLimiter returns an empty MemoryLimiter.
func NewMemoryLimiter() *MemoryLimiter {
	return &MemoryLimiter{buckets: map[string]*memBucket{}, now: time.Now}
}

// Take implements Limiter.
func (m *MemoryLimiter) Take(bucket string, r Rate) (bool, time.Duration) {
	if r.Unlimited() {
		return true, 0
	}
	m.mu.Lock()
	b := m.buckets[bucket]
	if b == nil || b.r != r {
		b = &memBucket{r: r, lim: rate.NewLimiter(rate.Limit(float64(r.N)/r.Period.Seconds()), r.N)}
		m.buckets[bucket] = b
	}
	m.mu.Unlock()
	now := m.now()
	res := b.lim.ReserveN(now, 1)
	if !res.OK() {
		return false, r.Period
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// RetryAfterSeconds is d rounded up to whole seconds, at least 1: the value
// of an HTTP Retry-After header.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
