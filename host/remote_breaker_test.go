package host_test

import (
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestRemoteBreaker: on a real host, a peer that keeps failing opens its
// breaker — calls then fail at once with circuit_open, /metrics shows the
// state and the change is logged — and once the peer answers again a
// half-open probe closes it.
func TestRemoteBreaker(t *testing.T) {
	t.Parallel()
	peer := newRelay(t) // answers 503 until its target is set
	b, _ := mustHostWith(t, toolsDir(t), func(c *config.Config) {
		c.PublicURL = peer.srv.URL // the card names the relay, the peer's url for host A
	})
	a, logs := mustHostWith(t, toolsDir(t), func(c *config.Config) {
		flaky := remoteAgent("flaky", peer.srv.URL)
		flaky.Retry.MaxAttempts = 1
		// Open long enough for the refused call below to come first even on a
		// loaded machine; the recovery waits for it.
		flaky.Breaker = config.RemoteBreaker{Failures: 2, OpenTimeout: 5 * time.Second, HalfOpenProbes: 1}
		c.Agents.Remote = []config.RemoteAgent{flaky}
	})
	sid := a.mustSession(t)
	call := func() rpcResponse {
		return a.call(t, "_cleveragents/agent/call", map[string]any{
			"session_id": sid, "target_agent_id": "flaky", "method": "echo", "params": map[string]any{"n": 1}})
	}
	metrics := func() string {
		_, body := a.get(t, "/metrics")
		return string(body)
	}
	wantMetrics := func(when string, want ...string) {
		t.Helper()
		got := metrics()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: /metrics lacks %s", when, w)
			}
		}
	}

	for range 2 {
		wantError(t, call(), -32102, "peer_unavailable")
	}
	wantError(t, call(), -32102, "circuit_open")
	wantMetrics("breaker open",
		`skillhost_remote_breaker_state{agent="flaky"} 2`,
		`skillhost_remote_breaker_transitions_total{agent="flaky",to="open"} 1`,
		`skillhost_remote_attempts_total{agent="flaky",outcome="retryable"} 2`,
		`skillhost_remote_attempts_total{agent="flaky",outcome="circuit_open"} 1`)
	if len(logs.lines("remote agent: circuit breaker", `"agent":"flaky"`, `"to":"open"`, `"level":"WARN"`)) != 1 {
		t.Errorf("the breaker opening is not logged once as a warning:\n%s", strings.Join(logs.lines("circuit breaker"), "\n"))
	}

	peer.to(t, b.URL)
	testutil.Eventually(t, time.Minute, "a half-open probe to reach the peer and close the breaker", func() bool {
		return call().Error == nil
	})
	wantMetrics("breaker closed again",
		`skillhost_remote_breaker_state{agent="flaky"} 0`,
		`skillhost_remote_breaker_transitions_total{agent="flaky",to="half-open"} 1`,
		`skillhost_remote_breaker_transitions_total{agent="flaky",to="closed"} 1`)
	if len(logs.lines("remote agent: circuit breaker", `"agent":"flaky"`, `"to":"closed"`, `"level":"INFO"`)) != 1 {
		t.Errorf("the breaker closing is not logged once:\n%s", strings.Join(logs.lines("circuit breaker"), "\n"))
	}
}
