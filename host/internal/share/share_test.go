package share_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/share"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func newCounter(limit, per int) *share.Counter {
	return share.New(share.Config{Resource: "streams", What: "streams", Limit: limit, LimitKey: "x.max_streams",
		Share: per, ShareKey: "x.max_streams_per_key"})
}

// mustAcquire takes a unit or fails the test.
func mustAcquire(t *testing.T, c *share.Counter, holder string) func() {
	t.Helper()
	release, err := c.Acquire(holder)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", holder, err)
	}
	return release
}

// A holder at its share is refused with key_quota naming the share's key,
// while another holder is still served; the host-wide cap refuses everyone.
func TestShareAndLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name           string
		limit, per     int
		take           map[string]int // units taken first, each must succeed
		then           string         // one more for this holder
		reason, limKey string         // "" = it succeeds
		sentinel       error
		value          int
	}{
		{"under the share", 8, 2, map[string]int{"a": 1}, "a", "", "", nil, 0},
		{"at the share", 8, 2, map[string]int{"a": 2}, "a", "key_quota", "x.max_streams_per_key", share.ErrOverShare, 2},
		{"another holder at the first's share", 8, 2, map[string]int{"a": 2}, "b", "", "", nil, 0},
		{"host full", 4, 2, map[string]int{"a": 2, "b": 2}, "c", "resource_exhausted", "x.max_streams", share.ErrFull, 4},
		{"no share: the limit alone", 4, 0, map[string]int{"a": 3}, "a", "", "", nil, 0},
		{"the local holder has no share", 4, 1, map[string]int{"": 3}, "", "", "", nil, 0},
		{"the local holder counts host-wide", 4, 1, map[string]int{"": 4}, "a", "resource_exhausted", "x.max_streams", share.ErrFull, 4},
		{"a share over the limit is the limit", 2, 5, map[string]int{"a": 2}, "a", "resource_exhausted", "x.max_streams", share.ErrFull, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCounter(tt.limit, tt.per)
			for h, n := range tt.take {
				for range n {
					mustAcquire(t, c, h)
				}
			}
			release, err := c.Acquire(tt.then)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("Acquire(%q): %v", tt.then, err)
				}
				release()
				return
			}
			fe := testutil.MustFault(t, err, fault.ResourceExhausted, tt.reason)
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) is false", err, tt.sentinel)
			}
			want := map[string]any{"resource": "streams", "limit": tt.limKey, "limit_value": tt.value}
			if diff := cmp.Diff(want, fe.Data); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

// Release frees the unit once, however often it is called, and the freed
// unit can be taken again.
func TestRelease(t *testing.T) {
	t.Parallel()
	c := newCounter(2, 1)
	release := mustAcquire(t, c, "a")
	if _, err := c.Acquire("a"); !errors.Is(err, share.ErrOverShare) {
		t.Fatalf("second unit of a: %v, want ErrOverShare", err)
	}
	release()
	release()
	if got := c.Held("a"); got != 0 {
		t.Errorf("Held(a) after release = %d, want 0", got)
	}
	mustAcquire(t, c, "b")
	mustAcquire(t, c, "a")
	if got := c.Held(""); got != 2 {
		t.Errorf("units held on the host = %d, want 2 (a double release must not free a second unit)", got)
	}
}

// Stats show the use, the largest holders first, and the refusals.
func TestStats(t *testing.T) {
	t.Parallel()
	c := newCounter(10, 3)
	for _, h := range []string{"a", "b", "b", "c", "c", "c", ""} {
		mustAcquire(t, c, h)
	}
	_, _ = c.Acquire("c")
	want := share.Stats{Resource: "streams", InUse: 7, Limit: 10, LimitKey: "x.max_streams", Share: 3, ShareKey: "x.max_streams_per_key",
		Holders: 3, Largest: []share.Holding{{"c", 3}, {"b", 2}, {"a", 1}}, RefusedShare: 1}
	if diff := cmp.Diff(want, c.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
}

// A nil counter counts and refuses nothing.
func TestNilCounter(t *testing.T) {
	t.Parallel()
	var c *share.Counter
	release, err := c.Acquire("a")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if c.Held("a") != 0 {
		t.Error("a nil counter holds units")
	}
}

// Concurrent holders never push the count past the limit or a share, and
// every release is counted (run with -race).
func TestConcurrent(t *testing.T) {
	t.Parallel()
	const limit, per, holders, tries = 16, 4, 8, 200
	c := newCounter(limit, per)
	var wg sync.WaitGroup
	var mu sync.Mutex
	over := ""
	for h := range holders {
		holder := string(rune('a' + h))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []func()
			for i := range tries {
				if release, err := c.Acquire(holder); err == nil {
					held = append(held, release)
				}
				if n, total := c.Held(holder), c.Held(""); n > per || total > limit {
					mu.Lock()
					over = holder
					mu.Unlock()
				}
				if i%3 == 0 && len(held) > 0 {
					held[0]()
					held = held[1:]
				}
			}
			for _, r := range held {
				r()
			}
		}()
	}
	wg.Wait()
	if over != "" {
		t.Errorf("holder %s saw the count past a cap", over)
	}
	if st := c.Stats(); st.InUse != 0 || st.Holders != 0 {
		t.Errorf("after every release: %+v, want nothing in use", st)
	}
}
