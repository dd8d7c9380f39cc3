package remote_test

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// TestCardCachedWithETag: the card is read once and used for card_ttl;
// after it, it is read again with If-None-Match and a 304 keeps it.
func TestCardCachedWithETag(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return okReply })
	cfg := peerConfig("p", peer.srv.URL)
	cfg.CardTTL = time.Hour
	ps := mustPeers(t, nil, nil, cfg)
	for range 3 {
		if _, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	peer.mu.Lock()
	cards, notModified := peer.cards, peer.notModified
	peer.mu.Unlock()
	if cards != 1 || notModified != 0 {
		t.Errorf("card read %d times (%d not modified), want once", cards, notModified)
	}

	cfg.ID, cfg.CardTTL = "short", time.Nanosecond
	ps = mustPeers(t, nil, nil, cfg)
	for range 3 {
		if _, err := ps.Call(callCtx(t), remote.Call{ID: "short", Method: "m"}); err != nil {
			t.Fatal(err)
		}
	}
	peer.mu.Lock()
	defer peer.mu.Unlock()
	if peer.cards != 4 || peer.notModified != 2 {
		t.Errorf("card read %d times (%d not modified), want 4 (2 not modified)", peer.cards, peer.notModified)
	}
}

// TestInterfaceSelection: JSON-RPC 1.0 first, then 0.3; interfaces on
// another host (or another port) are never used; no usable interface is
// peer_unavailable after one attempt.
func TestInterfaceSelection(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached a host the card named but the config did not: %s %s", r.Method, r.URL)
	}))
	t.Cleanup(other.Close)
	iface := func(url, binding, version string) string {
		return `{"url":"` + url + `","protocolBinding":"` + binding + `","protocolVersion":"` + version + `"}`
	}
	card := func(ifaces ...string) func(string) string {
		return func(base string) string {
			return `{"name":"fake","description":"","version":"1","supportedInterfaces":[` +
				strings.ReplaceAll(strings.Join(ifaces, ","), "BASE", base) +
				`],"capabilities":{"extensions":[{"uri":"https://skillhost.dev/ext/cleveragents/v1"}]},"skills":[]}`
		}
	}
	tests := []struct {
		name        string
		card        func(string) string
		wantVersion string // "" = no usable interface
	}{
		{"1.0 before 0.3", card(iface("BASE/rpc", "HTTP+JSON", "1.0"), iface("BASE/rpc", "JSONRPC", "0.3"), iface("BASE/rpc", "JSONRPC", "1.0")), "1.0"},
		{"0.3 when no 1.0", card(iface("BASE/rpc", "GRPC", "1.0"), iface("BASE/rpc", "JSONRPC", "0.3.0")), "0.3"},
		{"other host skipped", card(iface(other.URL+"/rpc", "JSONRPC", "1.0"), iface("BASE/rpc", "JSONRPC", "0.3")), "0.3"},
		{"only other hosts", card(iface(other.URL+"/rpc", "JSONRPC", "1.0")), ""},
		{"none", card(iface("BASE/rpc", "GRPC", "1.0")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			peer := newFakePeer(t, func(int) reply { return okReply })
			peer.cardJSON = tt.card
			ps := mustPeers(t, nil, nil, peerConfig("p", peer.srv.URL))
			res, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m"})
			if tt.wantVersion == "" {
				fe := testutil.MustFault(t, err, fault.AgentNotFound, fault.ReasonPeerUnavailable)
				if fe.Data["attempts"] != 1 || !remote.Fallible(err) {
					t.Errorf("attempts %v fallible %v, want 1 attempt, fallible", fe.Data["attempts"], remote.Fallible(err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Interface.Version != tt.wantVersion || res.Interface.URL != peer.srv.URL+"/rpc" {
				t.Errorf("interface = %+v, want JSON-RPC %s on the peer's url", res.Interface, tt.wantVersion)
			}
		})
	}
}

// TestCredentials: the key goes in the header the card's apiKey scheme
// names (or Authorization: Bearer, or credentials.header), with the call
// depth; it never appears in the host's logs, even when the peer refuses.
func TestCredentials(t *testing.T) {
	t.Parallel()
	apiKeyCard := func(base string) string {
		return strings.Replace(skillhostCard(base), `"skills":[]`,
			`"skills":[],"securitySchemes":{"apiKey":{"apiKeySecurityScheme":{"location":"header","name":"X-API-Key"}}},
			"securityRequirements":[{"schemes":{"apiKey":{}}}]`, 1)
	}
	tests := []struct {
		name, header, wantHeader, wantValue string
		card                                func(string) string
	}{
		{"card apiKey scheme", "", "X-Api-Key", "s3cret-env-key", apiKeyCard},
		{"bearer by default", "", "Authorization", "Bearer s3cret-env-key", skillhostCard},
		{"configured header", "X-Custom-Key", "X-Custom-Key", "s3cret-env-key", apiKeyCard},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			peer := newFakePeer(t, func(n int) reply {
				if n == 2 {
					return errReply(-32105, "invalid_credentials")
				}
				return okReply
			})
			peer.cardJSON = tt.card
			cfg := peerConfig("p", peer.srv.URL)
			cfg.Credentials.KeyEnv, cfg.Credentials.Header = "PEER_KEY", tt.header
			logs := &testutil.LogBuffer{}
			ps := mustPeers(t, nil, logs, cfg)
			if _, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m", Depth: 3}); err != nil {
				t.Fatal(err)
			}
			_, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m", Depth: 3})
			testutil.MustFault(t, err, fault.AgentNotFound, fault.ReasonPeerUnavailable)
			peer.mu.Lock()
			h := peer.headers[0]
			peer.mu.Unlock()
			if got := h.Get(tt.wantHeader); got != tt.wantValue {
				t.Errorf("%s = %q, want %q", tt.wantHeader, got, tt.wantValue)
			}
			if got := h.Get(remote.DepthHeader); got != "3" {
				t.Errorf("%s = %q, want 3", remote.DepthHeader, got)
			}
			if strings.Contains(logs.String(), "s3cret") || strings.Contains(err.Error(), "s3cret") {
				t.Error("the key appears in the logs or the error")
			}
		})
	}
}

// TestResponseCap: an answer over max_response fails with output_limit
// after one attempt (it would be as large again).
func TestResponseCap(t *testing.T) {
	t.Parallel()
	big := `{"agent_id":"x","method":"m","result":"` + strings.Repeat("x", 64<<10) + `"}`
	peer := newFakePeer(t, func(int) reply { return reply{result: []byte(big)} })
	cfg := peerConfig("big", peer.srv.URL)
	cfg.MaxResponse = 16 << 10
	ps := mustPeers(t, nil, nil, cfg)
	_, err := ps.Call(callCtx(t), remote.Call{ID: "big", Method: "m"})
	testutil.MustFault(t, err, fault.ResourceExhausted, fault.ReasonOutputLimit)
	if peer.count() != 1 {
		t.Errorf("attempts = %d, want 1", peer.count())
	}
}

// TestPeerSessions: each calling session gets its own peer session, reused
// by its later calls; past max_sessions the least recently used is closed
// on the peer; a session the peer forgot is made again once.
func TestPeerSessions(t *testing.T) {
	t.Parallel()
	peer := newFakePeer(t, func(int) reply { return okReply })
	cfg := peerConfig("p", peer.srv.URL)
	cfg.MaxSessions = 2
	ps := mustPeers(t, nil, nil, cfg)
	for _, sid := range []string{"a", "b", "a", "c", "b"} {
		if _, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m", SessionID: sid}); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 10*time.Second, "the evicted peer sessions to be closed", func() bool {
		peer.mu.Lock()
		defer peer.mu.Unlock()
		return len(peer.closed) == 2
	})
	peer.mu.Lock()
	// a→s1, b→s2, a→s1, c→s3 (evicts b: s2), b→s4 (evicts a: s1).
	if diff := cmp.Diff([]string{"peer-s1", "peer-s2", "peer-s1", "peer-s3", "peer-s4"}, peer.sessionsSeen); diff != "" {
		t.Errorf("sessions used (-want +got):\n%s", diff)
	}
	closed := append([]string(nil), peer.closed...)
	sort.Strings(closed) // closed in the background, in any order
	if diff := cmp.Diff([]string{"peer-s1", "peer-s2"}, closed); diff != "" {
		t.Errorf("sessions closed (-want +got):\n%s", diff)
	}
	peer.forgetSession = true
	peer.mu.Unlock()
	if _, err := ps.Call(callCtx(t), remote.Call{ID: "p", Method: "m", SessionID: "c"}); err != nil {
		t.Fatalf("after the peer forgot the session: %v", err)
	}
	peer.mu.Lock()
	defer peer.mu.Unlock()
	if got := peer.sessionsSeen[len(peer.sessionsSeen)-1]; got != "peer-s5" || peer.opened != 5 {
		t.Errorf("last session = %s after %d opened, want a new one (peer-s5)", got, peer.opened)
	}
}
