package metrics

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The ring keeps 15 minutes of 10 s buckets: calls land in the bucket of
// the time they ended, buckets older than the window read as empty (their
// slots are reused), and refused calls count as errors but not in latency.
func TestHistoryRing(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC) // a bucket boundary
	var h history
	h.add(t0, 2*time.Millisecond, false, false)
	h.add(t0.Add(9*time.Second), 4*time.Millisecond, true, false)   // same bucket
	h.add(t0.Add(9*time.Second), 0, true, true)                     // refused: no latency
	h.add(t0.Add(10*time.Second), 7*time.Millisecond, false, false) // the next one
	h.add(t0.Add(-15*time.Minute), time.Second, false, false)       // left the window by now
	now := t0.Add(10 * time.Second)
	var s Series
	h.read(now, &s)
	last := HistoryBuckets - 1
	type cell struct {
		Calls, Errors, Limited uint32
		Avg, Max               float64
	}
	got := map[int]cell{}
	for i := range HistoryBuckets {
		if s.Calls[i] > 0 {
			got[i] = cell{s.Calls[i], s.Errors[i], s.Limited[i], s.LatencyAvgMS[i], s.LatencyMaxMS[i]}
		}
	}
	want := map[int]cell{last - 1: {3, 2, 1, 3, 4}, last: {1, 0, 0, 7, 7}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("buckets (-want +got):\n%s", diff)
	}
	// 15 minutes after the second bucket both have left the window; the
	// slot of the second one is reused from scratch.
	later := t0.Add(15*time.Minute + 10*time.Second)
	h.add(later, time.Millisecond, false, false)
	h.read(later, &s)
	var calls uint32
	for _, c := range s.Calls {
		calls += c
	}
	if calls != 1 || s.Calls[last] != 1 {
		t.Errorf("after 15 minutes: %d calls in the window (last bucket %d), want only the new one", calls, s.Calls[last])
	}
}
