package share

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/skillhost/skillhost/host/fault"
)

// Sentinels wrapped by every refusal (errors.Is): which cap refused.
var (
	// ErrFull: the host holds the Counter's Limit units.
	ErrFull = errors.New("share: the host-wide cap is reached")
	// ErrOverShare: the holder holds its share.
	ErrOverShare = errors.New("share: the holder's share is used up")
)

// Config describes one counted resource. Limit is required; the rest names
// the resource in refusals, metrics and admin documents.
type Config struct {
	// Resource names the resource in metrics and errors ("events_streams").
	Resource string
	// What names its units in messages, plural ("GET /events streams").
	What string
	// Holder names a holder in messages. Optional. Default: "this key".
	Holder string
	// Limit caps the units held on the host; at least 1.
	Limit int
	// LimitKey is the configuration key that sets Limit.
	LimitKey string
	// Share caps the units one holder holds. Optional. Default: 0, no
	// per-holder cap (Limit alone); a Share over Limit is Limit.
	Share int
	// ShareKey is the configuration key that sets Share.
	ShareKey string
	// Full is the refusal at Limit. Optional. Default: -32106
	// resource_exhausted naming LimitKey.
	Full *fault.Error
	// Over is the refusal at a holder's Share. Optional. Default: -32106
	// key_quota naming ShareKey.
	Over *fault.Error
}

// Counter counts one resource's units, host-wide and per holder. The zero
// value is not usable; a nil *Counter counts nothing and refuses nothing.
// Safe for concurrent use.
type Counter struct {
	cfg Config

	mu    sync.Mutex
	total int
	held  map[string]int // holder -> units, only holders with at least one

	refusedFull, refusedShare atomic.Uint64
}

// New returns a Counter for cfg. It panics when cfg.Limit is below 1 (the
// configuration is validated before it gets here).
func New(cfg Config) *Counter {
	if cfg.Limit < 1 {
		panic(fmt.Sprintf("share: %s: Limit %d must be at least 1", cfg.Resource, cfg.Limit))
	}
	if cfg.Share < 0 || cfg.Share > cfg.Limit {
		cfg.Share = min(max(cfg.Share, 0), cfg.Limit)
	}
	if cfg.What == "" {
		cfg.What = "units of " + cfg.Resource
	}
	if cfg.Holder == "" {
		cfg.Holder = "this key"
	}
	if cfg.Full == nil {
		cfg.Full = fault.Newf(fault.ResourceExhausted, fault.ReasonResourceExhausted,
			"%d %s are in use on this host, its limit (%s); retry later", cfg.Limit, cfg.What, cfg.LimitKey)
	}
	if cfg.Over == nil {
		cfg.Over = fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"%s holds %d %s, its share of this host (%s); release one first", cfg.Holder, cfg.Share, cfg.What, cfg.ShareKey)
	}
	return &Counter{cfg: cfg, held: map[string]int{}}
}

// Acquire takes one unit for holder ("" counts host-wide only) and returns
// its release, which may be called more than once (only the first counts).
func (c *Counter) Acquire(holder string) (release func(), err error) {
	if c == nil {
		return func() {}, nil
	}
	return c.AcquireWithin(holder, c.cfg.Share)
}

// AcquireWithin is Acquire with the holder's share given (0: no per-holder
// cap), for resources whose share differs by holder.
func (c *Counter) AcquireWithin(holder string, share int) (release func(), err error) {
	if c == nil {
		return func() {}, nil
	}
	c.mu.Lock()
	switch {
	case c.total >= c.cfg.Limit:
		c.mu.Unlock()
		c.refusedFull.Add(1)
		return nil, c.refusal(c.cfg.Full, ErrFull, c.cfg.LimitKey, c.cfg.Limit)
	case holder != "" && share > 0 && c.held[holder] >= share:
		c.mu.Unlock()
		c.refusedShare.Add(1)
		return nil, c.refusal(c.cfg.Over, ErrOverShare, c.cfg.ShareKey, share)
	}
	c.total++
	if holder != "" {
		c.held[holder]++
	}
	c.mu.Unlock()
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			c.release(holder)
		}
	}, nil
}

func (c *Counter) release(holder string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if holder == "" {
		return
	}
	if c.held[holder]--; c.held[holder] <= 0 {
		delete(c.held, holder)
	}
}

// refusal is a copy of tmpl wrapping sentinel, with the resource and the
// refusing cap in its data.
func (c *Counter) refusal(tmpl *fault.Error, sentinel error, key string, value int) *fault.Error {
	fe := tmpl.With("resource", c.cfg.Resource).With("limit", key).With("limit_value", value)
	fe.Err = sentinel
	return fe
}

// Held is the number of units holder holds now.
func (c *Counter) Held(holder string) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if holder == "" {
		return c.total
	}
	return c.held[holder]
}

// Stats is a Counter's state, for /metrics and GET /admin/shares.
type Stats struct {
	Resource string `json:"resource"`
	// InUse is the units held on the host now, Limit its cap.
	InUse    int    `json:"in_use"`
	Limit    int    `json:"limit"`
	LimitKey string `json:"limit_key"`
	// Share is the per-holder cap (0: none).
	Share    int    `json:"share"`
	ShareKey string `json:"share_key,omitempty"`
	// Holders is how many holders hold a unit; Largest the biggest of
	// them (at most MaxLargest, most units first).
	Holders int       `json:"holders"`
	Largest []Holding `json:"largest"`
	// RefusedFull and RefusedShare count refusals since start: at Limit,
	// and at a holder's share.
	RefusedFull  uint64 `json:"refused_full"`
	RefusedShare uint64 `json:"refused_share"`
}

// Holding is what one holder holds.
type Holding struct {
	Holder string `json:"holder"`
	Units  int    `json:"units"`
}

// MaxLargest caps Stats.Largest.
const MaxLargest = 8

// Stats returns the counter's state (it copies the holders: O(holders)).
func (c *Counter) Stats() Stats {
	c.mu.Lock()
	st := Stats{Resource: c.cfg.Resource, InUse: c.total, Limit: c.cfg.Limit, LimitKey: c.cfg.LimitKey,
		Share: c.cfg.Share, ShareKey: c.cfg.ShareKey, Holders: len(c.held), Largest: make([]Holding, 0, len(c.held))}
	for h, n := range c.held {
		st.Largest = append(st.Largest, Holding{Holder: h, Units: n})
	}
	c.mu.Unlock()
	slices.SortFunc(st.Largest, func(a, b Holding) int {
		return cmp.Or(cmp.Compare(b.Units, a.Units), cmp.Compare(a.Holder, b.Holder))
	})
	st.Largest = st.Largest[:min(len(st.Largest), MaxLargest)]
	st.RefusedFull, st.RefusedShare = c.refusedFull.Load(), c.refusedShare.Load()
	return st
}

// Resource is the counter's resource name.
func (c *Counter) Resource() string { return c.cfg.Resource }
