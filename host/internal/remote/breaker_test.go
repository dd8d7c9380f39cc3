package remote_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestBreakerOpensAndRecovers: consecutive failures open the breaker; while
// open, calls fail with circuit_open without reaching the peer; after
// open_timeout one probe goes through (half-open): a failing probe opens
// it again, a succeeding one closes it.
func TestBreakerOpensAndRecovers(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return statusReply(http.StatusInternalServerError) })
	cfg := peerConfig("flaky", peer.srv.URL)
	cfg.Retry.MaxAttempts = 1
	cfg.Breaker = config.RemoteBreaker{Failures: 2, OpenTimeout: 300 * time.Millisecond, HalfOpenProbes: 1}
	rec := &recorder{}
	ps := mustPeers(t, rec, nil, cfg)
	call := func() error {
		_, err := ps.Call(callCtx(t), remote.Call{ID: "flaky", Method: "m"})
		return err
	}
	for range 2 {
		testutil.MustFault(t, call(), fault.AgentNotFound, fault.ReasonPeerUnavailable)
	}
	if got := ps.Breakers()["flaky"]; got != "open" {
		t.Fatalf("breaker = %s after 2 failures, want open", got)
	}
	err := call()
	fe := testutil.MustFault(t, err, fault.AgentNotFound, fault.ReasonCircuitOpen)
	if !remote.Fallible(err) || !remote.Retryable(err) || peer.count() != 2 {
		t.Errorf("open breaker: fallible %v retryable %v, peer saw %d calls; want true, true, 2", remote.Fallible(err), remote.Retryable(err), peer.count())
	}
	if ms, _ := fe.Data["retry_after_ms"].(int64); ms <= 0 || ms > 300 {
		t.Errorf("retry_after_ms = %v, want 0 < ms <= 300", fe.Data["retry_after_ms"])
	}

	// Half-open, the probe fails: open again.
	testutil.Eventually(t, 10*time.Second, "a half-open probe to reach the peer", func() bool {
		_ = call()
		return peer.count() == 3
	})
	if got := ps.Breakers()["flaky"]; got != "open" {
		t.Fatalf("breaker = %s after a failed probe, want open", got)
	}

	// Half-open, the probe succeeds: closed.
	peer.setScript(func(int) reply { return okReply })
	testutil.Eventually(t, 10*time.Second, "a half-open probe to succeed", func() bool {
		return call() == nil
	})
	if got := ps.Breakers()["flaky"]; got != "closed" {
		t.Fatalf("breaker = %s after a good probe, want closed", got)
	}
	if err := call(); err != nil {
		t.Fatalf("closed breaker: %v", err)
	}
	if peer.count() != 5 {
		t.Errorf("peer saw %d calls, want 5 (2 failures, a failed probe, a good probe, one more)", peer.count())
	}
	_, transitions := rec.seen()
	want := []string{"open", "half-open", "open", "half-open", "closed"}
	if diff := cmp.Diff(want, transitions); diff != "" {
		t.Errorf("breaker transitions (-want +got):\n%s", diff)
	}
}

// TestBreakerIgnoresAnswers: final answers (invalid params, failed skills)
// and the caller's own deadline never open the breaker: the peer works.
func TestBreakerIgnoresAnswers(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return errReply(-32602, "schema") })
	cfg := peerConfig("strict", peer.srv.URL)
	cfg.Breaker.Failures = 1
	ps := mustPeers(t, nil, nil, cfg)
	for range 3 {
		_, err := ps.Call(callCtx(t), remote.Call{ID: "strict", Method: "m"})
		testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonSchema)
	}
	peer.setScript(func(int) reply { return hangReply })
	_, err := ps.Call(callCtx(t), remote.Call{ID: "strict", Method: "m", Timeout: 100 * time.Millisecond})
	testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
	if got := ps.Breakers()["strict"]; got != "closed" || peer.count() != 4 {
		t.Errorf("breaker = %s after %d answers, want closed after 4", got, peer.count())
	}
}

// TestBreakerStopsRetries: a breaker that opens during a call's retries
// ends them: the remaining attempts are refused without reaching the peer.
func TestBreakerStopsRetries(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return reply{reset: true} })
	cfg := peerConfig("reset", peer.srv.URL)
	cfg.Retry.MaxAttempts = 5
	cfg.Breaker = config.RemoteBreaker{Failures: 2, OpenTimeout: time.Minute}
	ps := mustPeers(t, nil, nil, cfg)
	_, err := ps.Call(callCtx(t), remote.Call{ID: "reset", Method: "m"})
	fe := testutil.MustFault(t, err, fault.AgentNotFound, fault.ReasonCircuitOpen)
	if peer.count() != 2 || fe.Data["attempts"] != 3 {
		t.Errorf("peer saw %d, attempts %v; want 2 at the peer, the third refused by the breaker", peer.count(), fe.Data["attempts"])
	}
}
