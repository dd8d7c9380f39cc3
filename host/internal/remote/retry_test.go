package remote_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestRetriesOnlyRetryable: each scripted failure is retried (3 attempts
// reach the peer) only when it may go away; final answers reach it once.
func TestRetriesOnlyRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		reply        reply
		wantAttempts int
		wantKind     fault.Kind
		wantReason   string
		fallible     bool
	}{
		{"http 500", statusReply(http.StatusInternalServerError), 3, fault.AgentNotFound, fault.ReasonPeerUnavailable, true},
		{"http 503", statusReply(http.StatusServiceUnavailable), 3, fault.AgentNotFound, fault.ReasonPeerUnavailable, true},
		{"http 429", statusReply(http.StatusTooManyRequests), 3, fault.AgentNotFound, fault.ReasonPeerUnavailable, true},
		{"connection reset", reply{reset: true}, 3, fault.AgentNotFound, fault.ReasonPeerUnavailable, true},
		{"peer timeout", errReply(-32104, "timeout"), 3, fault.Timeout, fault.ReasonTimeout, true},
		{"peer pool saturated", errReply(-32106, "pool_saturated"), 3, fault.ResourceExhausted, fault.ReasonPoolSaturated, true},
		{"peer rate limited", errReply(-32106, "rate_limited"), 3, fault.ResourceExhausted, fault.ReasonRateLimited, true},
		{"peer store unavailable", errReply(-32603, "store_unavailable"), 3, fault.Internal, fault.ReasonStoreUnavailable, true},
		{"invalid params", errReply(-32602, "schema"), 1, fault.InvalidParams, fault.ReasonSchema, false},
		{"skill failed", errReply(-32103, "trap"), 1, fault.SkillFailed, fault.ReasonTrap, false},
		{"call depth", errReply(-32106, "call_depth"), 1, fault.ResourceExhausted, fault.ReasonCallDepth, false},
		{"memory limit", errReply(-32106, "memory_limit"), 1, fault.ResourceExhausted, fault.ReasonMemoryLimit, false},
		{"credentials refused", errReply(-32105, "invalid_credentials"), 1, fault.AgentNotFound, fault.ReasonPeerUnavailable, true},
		{"http 401", statusReply(http.StatusUnauthorized), 1, fault.AgentNotFound, fault.ReasonPeerUnavailable, true},
		{"undeclared reason", errReply(-32103, "made_up"), 1, fault.SkillFailed, "", false},
		{"garbage body", reply{body: []byte("<html>oops</html>")}, 1, fault.InvalidAgentResponse, fault.ReasonInvalidAgentResponse, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			peer := newFakePeer(t, func(int) reply { return tt.reply })
			ps := mustPeers(t, nil, nil, peerConfig("p", peer.srv.URL))
			_, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m", Input: json.RawMessage(`{"a":1}`)})
			fe := testutil.MustFault(t, err, tt.wantKind, tt.wantReason)
			if got := peer.count(); got != tt.wantAttempts {
				t.Errorf("attempts at the peer = %d, want %d", got, tt.wantAttempts)
			}
			if got := fe.Data["attempts"]; got != tt.wantAttempts {
				t.Errorf("error data attempts = %v, want %d", got, tt.wantAttempts)
			}
			if got := remote.Fallible(err); got != tt.fallible {
				t.Errorf("Fallible = %v, want %v", got, tt.fallible)
			}
			if fe.Data["agent_id"] != "p" {
				t.Errorf("agent_id = %v, want p", fe.Data["agent_id"])
			}
		})
	}
}

// TestRetryThenSuccess: two failures, then an answer: the third attempt
// answers and the result says so.
func TestRetryThenSuccess(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(n int) reply {
		if n < 3 {
			return statusReply(http.StatusBadGateway)
		}
		return okReply
	})
	ps := mustPeers(t, nil, nil, peerConfig("p", peer.srv.URL))
	res, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m"})
	if err != nil {
		t.Fatal(err)
	}
	want := remote.Interface{URL: peer.srv.URL + "/rpc", Binding: "JSONRPC", Version: "1.0", Extension: true}
	if diff := cmp.Diff(want, res.Interface); diff != "" {
		t.Errorf("interface (-want +got):\n%s", diff)
	}
	if res.Attempts != 3 || string(res.Output) != `{"ok":true}` || res.AgentID != "p" {
		t.Errorf("result = %+v, want 3 attempts, output {\"ok\":true}", res)
	}
	var raw map[string]any
	if err := json.Unmarshal(res.Raw, &raw); err != nil || raw["agent_id"] != "x" {
		t.Errorf("raw = %s, want the peer's agent/call result", res.Raw)
	}
}

// TestPeerDown: nothing listens: every attempt fails to connect, is
// retried, and the call fails with peer_unavailable.
func TestPeerDown(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	ps := mustPeers(t, rec, nil, peerConfig("down", downURL(t)))
	_, err := ps.Call(callCtx(t), remote.Call{ID: "down", Method: "m"})
	fe := testutil.MustFault(t, err, fault.AgentNotFound, fault.ReasonPeerUnavailable)
	if fe.Data["attempts"] != 3 || !remote.Fallible(err) || !remote.Retryable(err) {
		t.Errorf("err = %v %v, want 3 attempts, fallible and retryable", fe, fe.Data)
	}
	outcomes, _ := rec.seen()
	if diff := cmp.Diff([]string{"retryable", "retryable", "retryable"}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestDeadlineHolds: a hanging peer and a caller's deadline shorter than
// attempt_timeout: the call ends at the caller's deadline with -32104, the
// peer was told less time than that, and nothing more is tried.
func TestDeadlineHolds(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return hangReply })
	ps := mustPeers(t, nil, nil, peerConfig("hang", peer.srv.URL))
	const timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := ps.Call(callCtx(t), remote.Call{ID: "hang", Method: "m", Timeout: timeout})
	took := time.Since(start)
	testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
	if took < timeout || took > timeout+5*time.Second {
		t.Errorf("call took %v, want about %v", took, timeout)
	}
	if remote.Fallible(err) {
		t.Error("the caller's own deadline let a fallback be tried")
	}
	peer.mu.Lock()
	defer peer.mu.Unlock()
	if peer.calls != 1 || len(peer.timeouts) != 1 || peer.timeouts[0] > float64(timeout.Milliseconds()) || peer.timeouts[0] <= 0 {
		t.Errorf("peer saw %d calls with timeouts %v, want 1 with 0 < timeout <= %v", peer.calls, peer.timeouts, timeout)
	}
}

// TestAttemptTimeout: a hanging peer with a short attempt_timeout: each
// attempt times out, is retried, and the call fails retryably (a fallback
// may answer) well before its own deadline.
func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return hangReply })
	cfg := peerConfig("hang", peer.srv.URL)
	cfg.AttemptTimeout, cfg.Retry.MaxAttempts = 200*time.Millisecond, 2
	ps := mustPeers(t, nil, nil, cfg)
	_, err := ps.Call(callCtx(t), remote.Call{ID: "hang", Method: "m", Timeout: 20 * time.Second})
	testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
	if !remote.Fallible(err) || peer.count() != 2 {
		t.Errorf("fallible = %v, attempts = %d; want true, 2", remote.Fallible(err), peer.count())
	}
}

// TestCallerCancel: a caller that goes away ends the call at once; it is
// not retried.
func TestCallerCancel(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return hangReply })
	ps := mustPeers(t, nil, nil, peerConfig("hang", peer.srv.URL))
	ctx, cancel := testCancelAfterFirstCall(t, peer)
	defer cancel()
	_, err := ps.Call(ctx, remote.Call{ID: "hang", Method: "m"})
	if !errors.Is(err, fault.ErrCanceled) || peer.count() != 1 {
		t.Errorf("err = %v after %d attempts, want canceled after 1", err, peer.count())
	}
}
