package admin

import (
	"sync"
	"time"
)

// DefaultRingSize is how many recent failures a host keeps.
const DefaultRingSize = 200

// maxMessage caps the message kept of a failure.
const maxMessage = 300

// Failure is one failed call.
type Failure struct {
	Time      time.Time `json:"time"`
	Method    string    `json:"method,omitempty"` // the JSON-RPC method; "" for plan steps
	Plugin    string    `json:"plugin,omitempty"` // set when the call reached a loaded skill
	Skill     string    `json:"skill,omitempty"`
	Code      int       `json:"code"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	SessionID string    `json:"session_id,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
	KeyID     string    `json:"key_id,omitempty"`
	Transport string    `json:"transport,omitempty"` // http, stdio; "" for plan steps and A2A tasks
}

// Ring keeps the most recent failures, at most its size; older ones are
// dropped (Total still counts them).
type Ring struct {
	mu    sync.Mutex
	buf   []Failure
	next  int
	total uint64
}

// NewRing returns a ring keeping at most n failures (n ≥ 1).
func NewRing(n int) *Ring { return &Ring{buf: make([]Failure, 0, max(n, 1))} }

// Add records f, cutting a long message.
func (r *Ring) Add(f Failure) {
	if len(f.Message) > maxMessage {
		f.Message = truncate(f.Message, maxMessage)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, f)
		return
	}
	r.buf[r.next] = f
	r.next = (r.next + 1) % len(r.buf)
}

// List returns the kept failures, newest first, at most limit (≤ 0: all).
func (r *Ring) List(limit int) []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.buf)
	if limit <= 0 || limit > n {
		limit = n
	}
	out := make([]Failure, 0, limit)
	for i := range limit {
		// newest is just before next (or the last appended while filling)
		idx := (r.next - 1 - i + 2*n) % n
		if len(r.buf) < cap(r.buf) {
			idx = n - 1 - i
		}
		out = append(out, r.buf[idx])
	}
	return out
}

// Total counts every failure added, kept or dropped.
func (r *Ring) Total() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Size is the most failures the ring keeps.
func (r *Ring) Size() int { return cap(r.buf) }

// truncate cuts s to at most n bytes on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + mark
}
