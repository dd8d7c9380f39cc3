package delivery_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/delivery"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// once is a retry policy of one attempt.
var once = delivery.Retry{Attempts: 1}

// A receiver that accepts and never answers holds only its destination's
// slots: key A's 90 deliveries there leave key B's delivery, and A's own
// delivery to another destination, to go at once, while A's receiver still
// holds its requests.
func TestSilentReceiverHoldsOnlyItsDestination(t *testing.T) {
	t.Parallel()
	s := mustService(t, delivery.Config{Delivery: deliveryLimits(func(c *config.Delivery) { c.ConcurrentPerDestination = 4; c.ConcurrentPerKey = 8; c.MaxConcurrent = 64 })})
	silent := newReceiver(t, true, nil)
	fast := newReceiver(t, false, nil)
	other := newReceiver(t, false, nil)
	for i := range 90 {
		s.submit(t, "alice", fmt.Sprint("task", i%9, "/cfg", i), silent.URL, fmt.Sprint("a", i), once)
	}
	testutil.Eventually(t, 30*time.Second, "the silent receiver to hold 4 requests", func() bool {
		now, _ := silent.held()
		return now == 4
	})
	s.submit(t, "bob", "t", fast.URL, "b", once)
	s.submit(t, "alice", "elsewhere", other.URL, "a-elsewhere", once)
	for _, body := range []string{"b", "a-elsewhere"} {
		if r := s.waitDone(t, body); r.Outcome != delivery.Delivered {
			t.Errorf("%s: %+v, want delivered", body, r)
		}
	}
	if now, most := silent.held(); now != 4 || most != 4 {
		t.Errorf("the silent receiver holds %d requests (at most %d), want 4 (delivery.concurrent_per_destination)", now, most)
	}
	if got := s.Pending()["test"]; got != 90 {
		t.Errorf("%d deliveries pending, want alice's 90 at the silent receiver", got)
	}
}

// A delivery waiting for its retry holds no slot: with one slot in all, a
// second delivery to the same destination goes while the first waits.
func TestRetryWaitHoldsNoSlot(t *testing.T) {
	t.Parallel()
	s := mustService(t, delivery.Config{Delivery: deliveryLimits(func(c *config.Delivery) { c.ConcurrentPerDestination = 1; c.ConcurrentPerKey = 1; c.MaxConcurrent = 1 })})
	rcv := newReceiver(t, false, func(body string, _ int) int {
		if body == "flaky" {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	s.submit(t, "alice", "", rcv.URL, "flaky", delivery.Retry{Attempts: 3, Initial: time.Hour})
	testutil.Eventually(t, 30*time.Second, "the first attempt", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		return rcv.attempts["flaky"] == 1
	})
	s.submit(t, "alice", "", rcv.URL, "second", once)
	if r := s.waitDone(t, "second"); r.Outcome != delivery.Delivered {
		t.Fatalf("second: %+v", r)
	}
	if _, ok := s.res.of("flaky"); ok {
		t.Error("flaky ended; it should wait an hour for its retry")
	}
}

// Deliveries of one lane go one at a time, in order, each retried before
// the next; other lanes do not wait for it.
func TestLaneKeepsOrder(t *testing.T) {
	t.Parallel()
	s := mustService(t, delivery.Config{})
	rcv := newReceiver(t, false, func(body string, attempt int) int {
		if attempt == 1 && strings.HasSuffix(body, "0") { // every tenth fails once
			return http.StatusInternalServerError
		}
		return 0
	})
	var want []string
	for i := range 30 {
		body := fmt.Sprint("u", i)
		want = append(want, body)
		s.submit(t, "alice", "task-1/cfg", rcv.URL, body, delivery.Retry{Attempts: 3, Initial: 10 * time.Millisecond})
	}
	s.waitDone(t, "u29")
	if diff := cmp.Diff(want, rcv.delivered()); diff != "" {
		t.Errorf("delivery order (-want +got):\n%s", diff)
	}
}

// Past its pending cap a key loses its own oldest waiting deliveries, never
// another key's: counted, and logged once per burst. Past the host's cap the
// key that submits pays too. A Durable request is refused instead.
func TestDropsOnlyTheOffendingKeysOldest(t *testing.T) {
	t.Parallel()
	s := mustService(t, delivery.Config{Delivery: deliveryLimits(func(c *config.Delivery) { c.MaxPendingPerKey = 5; c.MaxPending = 12; c.ConcurrentPerDestination = 4 }), DropLogEvery: time.Hour})
	silentA, silentB, silentC := newReceiver(t, true, nil), newReceiver(t, true, nil), newReceiver(t, true, nil)
	// submit queues bodies prefix+from..to-1 of key, then (when held > 0)
	// waits until the receiver holds that many: they run, not droppable.
	submit := func(key, prefix string, rcv *receiver, from, to, held int) {
		for i := from; i < to; i++ {
			s.submit(t, key, "", rcv.URL, fmt.Sprint(prefix, i), once)
		}
		if held > 0 {
			testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%s's receiver to hold %d", key, held), func() bool {
				now, _ := rcv.held()
				return now == held
			})
		}
	}
	submit("bob", "b", silentB, 0, 4, 4)
	submit("bob", "b", silentB, 4, 5, 0)
	submit("alice", "a", silentA, 0, 4, 4)
	submit("alice", "a", silentA, 4, 50, 0)
	submit("carol", "c", silentC, 0, 2, 2)
	submit("carol", "c", silentC, 2, 10, 0)
	// alice: 4 running, a49 waiting; the 45 in between dropped, each as the
	// oldest waiting. carol: the host holds 12 (bob's 5, alice's 5, her 2
	// running), so each later one of hers is dropped. bob keeps all 5.
	if diff := cmp.Diff(map[delivery.Outcome]int{delivery.Dropped: 45}, s.res.byOutcome("alice")); diff != "" {
		t.Errorf("alice's outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[delivery.Outcome]int{delivery.Dropped: 8}, s.res.byOutcome("carol")); diff != "" {
		t.Errorf("carol's outcomes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[delivery.Outcome]int{}, s.res.byOutcome("bob")); diff != "" {
		t.Errorf("bob's outcomes (-want +got):\n%s", diff)
	}
	if got := s.obs.get("test", delivery.Dropped); got != 53 {
		t.Errorf("dropped counted %d, want 53", got)
	}
	err := s.Submit(&delivery.Request{Kind: "test", Key: "alice", URL: silentA.URL, Durable: true, Retry: once, Timeout: time.Minute})
	if !errors.Is(err, delivery.ErrKeyFull) {
		t.Errorf("a durable request past alice's cap: %v, want ErrKeyFull", err)
	}
	for _, key := range []string{"alice", "carol"} {
		if n := strings.Count(s.logs.String(), `"key":"`+key+`"`); n != 1 {
			t.Errorf("%d log lines about %s's drops, want 1 per burst:\n%s", n, key, s.logs)
		}
	}
	silentA.unblock()
	silentB.unblock()
	silentC.unblock()
	for _, body := range []string{"a49", "b4", "c1"} {
		s.waitDone(t, body)
	}
	got := map[string][]string{"alice": sorted(silentA.delivered()), "bob": sorted(silentB.delivered()), "carol": sorted(silentC.delivered())}
	want := map[string][]string{"alice": {"a0", "a1", "a2", "a3", "a49"}, "bob": {"b0", "b1", "b2", "b3", "b4"}, "carol": {"c0", "c1"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// A name that resolves to an internal address is refused without a retry,
// and the failure's text names the host and the rule, not the address.
func TestRefusedAddressTextNamesTheRule(t *testing.T) {
	t.Parallel()
	s := mustService(t, delivery.Config{Client: hostfn.NetPolicy{Timeout: 10 * time.Second}.Client()})
	rcv := newReceiver(t, false, nil)
	url := strings.Replace(rcv.URL, "127.0.0.1", "localhost", 1)
	s.submit(t, "alice", "", url, "x", delivery.Retry{Attempts: 5, Initial: time.Millisecond})
	r := s.waitDone(t, "x")
	if r.Outcome != delivery.Failed || r.Attempts != 1 {
		t.Errorf("result %+v, want failed after 1 attempt", r)
	}
	for _, want := range []string{`host "localhost"`, "loopback", "net.allow_private"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("text %q lacks %q", r.Text, want)
		}
	}
	for _, leak := range []string{"127.0.0.1", "::1"} {
		if strings.Contains(r.Text, leak) {
			t.Errorf("text %q shows the resolved address", r.Text)
		}
	}
	if got := rcv.delivered(); len(got) != 0 {
		t.Errorf("the refused receiver got %v", got)
	}
}

// Stopping ends every waiting delivery with Stopped; later submits fail.
func TestStopEndsWaitingDeliveries(t *testing.T) {
	t.Parallel()
	s := mustService(t, delivery.Config{Delivery: deliveryLimits(func(c *config.Delivery) { c.ConcurrentPerDestination = 1 })})
	silent := newReceiver(t, true, nil)
	s.submit(t, "alice", "", silent.URL, "running", once)
	s.submit(t, "alice", "", silent.URL, "waiting", once)
	testutil.Eventually(t, 30*time.Second, "the first request to be held", func() bool {
		now, _ := silent.held()
		return now == 1
	})
	s.stop()
	for _, body := range []string{"running", "waiting"} {
		if r, ok := s.res.of(body); !ok || r.Outcome != delivery.Stopped {
			t.Errorf("%s: %+v, %v; want stopped", body, r, ok)
		}
	}
	if err := s.Submit(&delivery.Request{Kind: "test", Key: "alice", URL: silent.URL, Timeout: time.Minute}); !errors.Is(err, delivery.ErrStopped) {
		t.Errorf("Submit after stop: %v, want ErrStopped", err)
	}
}

func TestRetryWait(t *testing.T) {
	t.Parallel()
	r := delivery.Retry{Attempts: 10, Initial: time.Second, Max: 30 * time.Second}
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 5: 16 * time.Second} {
		if w := r.Wait(n); w < want/2 || w > want*3/2 {
			t.Errorf("Wait(%d) = %v, want %v ±50%%", n, w, want)
		}
	}
	for range 20 {
		if w := r.Wait(9); w > 30*time.Second {
			t.Fatalf("Wait(9) = %v, over Max", w)
		}
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
