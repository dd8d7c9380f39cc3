package metrics

import (
	"sort"
	"sync"
	"time"
)

// The per-skill history behind the dashboard's charts: a ring of
// HistoryBuckets buckets of HistoryBucket each (15 minutes), kept in host
// memory. A skill holds one ring (about 4 KiB) from its first call until
// its plugin no longer has it.
const (
	HistoryBucket  = 10 * time.Second
	HistoryBuckets = 90
)

// bucket is one HistoryBucket of a skill's calls. epoch is the bucket's
// start in HistoryBucket units since the Unix epoch; a slot whose epoch is
// not the one asked for is empty (its counts are of an older bucket).
type bucket struct {
	epoch   int64
	calls   uint32
	errors  uint32
	limited uint32 // refused by a rate limit (errors include them)
	ran     uint32 // calls whose latency counts: all but the refused ones
	sumNS   uint64
	maxNS   uint64
}

// history is one skill's ring. Safe for concurrent use.
type history struct {
	mu    sync.Mutex
	slots [HistoryBuckets]bucket
}

func epochOf(t time.Time) int64 { return t.UnixNano() / int64(HistoryBucket) }

// add records a call that ended at now after d; failed and limited say how
// it ended (a limited call never ran: its latency is not counted).
func (h *history) add(now time.Time, d time.Duration, failed, limited bool) {
	e := epochOf(now)
	h.mu.Lock()
	defer h.mu.Unlock()
	b := &h.slots[e%HistoryBuckets]
	switch {
	case b.epoch > e: // a call that ended before its slot was reused: out of the window
		return
	case b.epoch < e:
		*b = bucket{epoch: e}
	}
	b.calls++
	if failed {
		b.errors++
	}
	if limited {
		b.limited++
		return
	}
	ns := uint64(max(d, 0))
	b.ran++
	b.sumNS += ns
	b.maxNS = max(b.maxNS, ns)
}

// Series are one skill's buckets, oldest first, the last one the bucket
// running now. Latencies are in milliseconds (0 for a bucket without calls
// that ran).
type Series struct {
	Plugin       string    `json:"plugin"`
	Skill        string    `json:"skill"`
	Calls        []uint32  `json:"calls"`
	Errors       []uint32  `json:"errors"`         // failed calls, limited ones included
	Limited      []uint32  `json:"rate_limited"`   // calls refused by a rate limit
	LatencyAvgMS []float64 `json:"latency_avg_ms"` // mean of the calls that ran
	LatencyMaxMS []float64 `json:"latency_max_ms"`
}

// read returns the HistoryBuckets buckets ending with the one of now.
func (h *history) read(now time.Time, s *Series) {
	last := epochOf(now)
	s.Calls, s.Errors, s.Limited = make([]uint32, HistoryBuckets), make([]uint32, HistoryBuckets), make([]uint32, HistoryBuckets)
	s.LatencyAvgMS, s.LatencyMaxMS = make([]float64, HistoryBuckets), make([]float64, HistoryBuckets)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range HistoryBuckets {
		e := last - HistoryBuckets + 1 + int64(i)
		b := h.slots[((e%HistoryBuckets)+HistoryBuckets)%HistoryBuckets]
		if b.epoch != e {
			continue
		}
		s.Calls[i], s.Errors[i], s.Limited[i] = b.calls, b.errors, b.limited
		if b.ran > 0 {
			s.LatencyAvgMS[i] = roundMS(float64(b.sumNS) / float64(b.ran))
			s.LatencyMaxMS[i] = roundMS(float64(b.maxNS))
		}
	}
}

// roundMS turns nanoseconds into milliseconds with 3 decimals.
func roundMS(ns float64) float64 { return float64(int64(ns/1e3+0.5)) / 1e3 }

// History is every called skill's recent buckets.
type History struct {
	// Start is when the oldest bucket began; each is BucketSeconds long,
	// the last one running now.
	Start         time.Time `json:"start"`
	BucketSeconds int       `json:"bucket_seconds"`
	Buckets       int       `json:"buckets"`
	Skills        []Series  `json:"skills"` // sorted by plugin and skill
}

// History reads the recent buckets of every skill called since its plugin
// was loaded, as of now.
func (m *Metrics) History(now time.Time) History {
	h := History{Start: time.Unix(0, (epochOf(now)-HistoryBuckets+1)*int64(HistoryBucket)).UTC(),
		BucketSeconds: int(HistoryBucket / time.Second), Buckets: HistoryBuckets, Skills: []Series{}}
	if cur := m.skills.byID.Load(); cur != nil {
		for k, sm := range *cur {
			s := Series{Plugin: k.plugin, Skill: k.skill}
			sm.history.read(now, &s)
			h.Skills = append(h.Skills, s)
		}
	}
	sort.Slice(h.Skills, func(i, j int) bool {
		if h.Skills[i].Plugin != h.Skills[j].Plugin {
			return h.Skills[i].Plugin < h.Skills[j].Plugin
		}
		return h.Skills[i].Skill < h.Skills[j].Skill
	})
	return h
}
