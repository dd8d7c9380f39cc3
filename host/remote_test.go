package host_test

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// remoteAgent is an agents.remote entry with fast retries.
func remoteAgent(id, url string, fallback ...string) config.RemoteAgent {
	return config.RemoteAgent{ID: id, URL: url, Agent: "tools", Fallback: fallback,
		Retry: config.RemoteRetry{MaxAttempts: 2, InitialInterval: time.Millisecond, MaxInterval: 5 * time.Millisecond}}
}

// toolsDir is a plugin folder with the tools plugin.
func toolsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	return dir
}

// relay is a reverse proxy on 127.0.0.1 whose target is set once the host
// behind it runs (hosts configured with each other's URL need them before
// they start); it counts the requests it relays.
type relay struct {
	srv      *httptest.Server
	target   atomic.Pointer[url.URL]
	requests atomic.Int64
}

func newRelay(t *testing.T) *relay {
	t.Helper()
	r := &relay{}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(r.target.Load())
	}, ErrorLog: log.New(io.Discard, "", 0)} // a host that already stopped (its peer closing sessions at shutdown)
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.target.Load() == nil {
			http.Error(w, "no target yet", http.StatusServiceUnavailable)
			return
		}
		if req.URL.Path == "/rpc" {
			r.requests.Add(1)
		}
		proxy.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *relay) to(t *testing.T, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	r.target.Store(u)
}

// TestRemoteAgentCall: agent/call on host A reaches the tools plugin of host
// B through B's card and skillhost's extension; B's answers, errors
// included, come back as B gave them, and the result names the agent.
func TestRemoteAgentCall(t *testing.T) {
	t.Parallel()
	b := mustHost(t, toolsDir(t))
	a, _ := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		c.Agents.Remote = []config.RemoteAgent{remoteAgent("b-tools", b.URL)}
	})
	sid := a.mustSession(t)
	got := a.mustResult(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "b-tools", "method": "echo", "params": map[string]any{"text": "hi"}})
	remote, _ := got["remote"].(map[string]any)
	if got["agent_id"] != "b-tools" || got["method"] != "echo" || remote["protocol"] != "cleveragents" || remote["attempts"] != 1.0 {
		t.Errorf("agent/call = %v, want agent b-tools over cleveragents in 1 attempt", got)
	}
	if diff := cmp.Diff(map[string]any{"text": "hi"}, got["result"]); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	wantError(t, a.call(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "b-tools", "method": "strict-echo", "params": map[string]any{"n": "x"}}), -32602, "schema")
	wantError(t, a.call(t, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "b-tools", "method": "nope"}), -32602, "unknown_skill")
}

// TestRemoteFallback: a primary that is down (or whose breaker is open)
// hands the call to its fallbacks in order: a remote agent, or a plugin of
// this host; the result says who answered.
func TestRemoteFallback(t *testing.T) {
	t.Parallel()
	b := mustHost(t, toolsDir(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	a, logs := mustHostWith(t, toolsDir(t), func(c *config.Config) {
		c.Agents.Remote = []config.RemoteAgent{
			remoteAgent("primary", down, "also-down", "b-tools"),
			remoteAgent("also-down", down),
			remoteAgent("b-tools", b.URL),
			remoteAgent("local-fallback", down, "tools"),
		}
	})
	sid := a.mustSession(t)
	for _, tt := range []struct{ target, answeredBy string }{{"primary", "b-tools"}, {"local-fallback", "tools"}} {
		got := a.mustResult(t, "_cleveragents/agent/call", map[string]any{
			"session_id": sid, "target_agent_id": tt.target, "method": "echo", "params": map[string]any{"n": 1}})
		if got["agent_id"] != tt.answeredBy || got["fallback_from"] != tt.target {
			t.Errorf("agent/call %s answered by %v (fallback_from %v), want %s", tt.target, got["agent_id"], got["fallback_from"], tt.answeredBy)
		}
	}
	if len(logs.lines("answered by a fallback", `"fallback":"b-tools"`)) != 1 {
		t.Error("the fallback is not logged")
	}
	_, body := a.get(t, "/metrics")
	metrics := string(body)
	for _, want := range []string{
		`skillhost_remote_fallbacks_total{agent="primary",fallback="b-tools"} 1`,
		`skillhost_remote_attempts_total{agent="primary",outcome="retryable"} 2`,
		`skillhost_remote_breaker_state{agent="primary"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestForwardingCycleEnds: agent "loop" on host A is host B's, and B's is
// A's: the call goes round until a host refuses the hop past
// agents.max_call_depth, and -32106 call_depth comes back to the caller.
func TestForwardingCycleEnds(t *testing.T) {
	t.Parallel()
	ra, rb := newRelay(t), newRelay(t)
	hostWith := func(self, other *relay) *testHost {
		th, _ := mustHostWith(t, t.TempDir(), func(c *config.Config) {
			c.PublicURL = self.srv.URL // the card names the relay, which is this host's url for the other
			c.Agents.MaxCallDepth = 4
			loop := remoteAgent("loop", other.srv.URL)
			loop.Agent = "loop" // the other host's own "loop": its remote agent
			c.Agents.Remote = []config.RemoteAgent{loop}
		})
		return th
	}
	a, b := hostWith(ra, rb), hostWith(rb, ra)
	ra.to(t, a.URL)
	rb.to(t, b.URL)
	r := a.call(t, "_cleveragents/agent/call", map[string]any{"session_id": a.mustSession(t), "target_agent_id": "loop", "method": "echo"})
	wantError(t, r, -32106, "call_depth")
	// A→B (1), B→A (2), A→B (3), B→A (4): A refuses hop 5. Each forward
	// also opened a session on its peer.
	if calls := ra.requests.Load() + rb.requests.Load(); calls > 8 {
		t.Errorf("%d requests went round the cycle, want at most 8 (4 hops, each with its session)", calls)
	}
}

// echoAgent is an agent written with the official a2a-go v2 server SDK: its
// one skill "greet" answers {"greeting": "hello, <name>"}.
type echoAgent struct{}

func (echoAgent) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var in struct{ Name string }
		for _, p := range ec.Message.Parts {
			b, _ := json.Marshal(p.Data())
			_ = json.Unmarshal(b, &in)
		}
		skill, _ := ec.Message.Metadata["skillId"].(string)
		if skill != "greet" {
			yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("unknown skill")), nil)
			return
		}
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewDataPart(map[string]any{"greeting": "hello, " + in.Name})), nil)
	}
}

func (echoAgent) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// TestA2ASDKPeer: a peer written with a2a-go v2's server SDK (no skillhost
// extension on its card) is called through agent/call with A2A
// SendMessage.
func TestA2ASDKPeer(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	peer := httptest.NewServer(mux)
	t.Cleanup(peer.Close)
	card := &a2a.AgentCard{Name: "greeter", Description: "a2a-go v2 agent", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(peer.URL+"/a2a", a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"application/json"}, DefaultOutputModes: []string{"application/json"},
		Skills: []a2a.AgentSkill{{ID: "greet", Name: "Greet", Description: "greets", Tags: []string{"demo"}}}}
	mux.Handle("/a2a", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(echoAgent{})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))

	a, _ := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		c.Agents.Remote = []config.RemoteAgent{remoteAgent("greeter", peer.URL)}
	})
	got := a.mustResult(t, "_cleveragents/agent/call", map[string]any{
		"session_id": a.mustSession(t), "target_agent_id": "greeter", "method": "greet", "params": map[string]any{"name": "Ada"}})
	remote, _ := got["remote"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"greeting": "hello, Ada"}, got["result"]); diff != "" || remote["protocol"] != "a2a" {
		t.Errorf("agent/call = %v (-want +got result):\n%s", got, diff)
	}
}

// TestRemoteAgentAuth: host B requires keys; host A sends its key for B
// (credentials.key_file). A's callers need an agent: scope for the remote
// agent; a fallback they may not use is skipped.
func TestRemoteAgentAuth(t *testing.T) {
	t.Parallel()
	bKey := newKey(t, "host-a", "agent:tools")
	b, bLogs := mustHostWith(t, toolsDir(t), func(c *config.Config) { c.Auth.Keys = []config.AuthKey{bKey.Entry} })
	keyFile := filepath.Join(t.TempDir(), "b.key")
	if err := os.WriteFile(keyFile, []byte(bKey.Secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	user := newKey(t, "user", "agent:b-*", "method:_cleveragents/*")
	a, aLogs := mustHostWith(t, t.TempDir(), func(c *config.Config) {
		good := remoteAgent("b-tools", b.URL)
		good.Credentials.KeyFile = keyFile
		keyless := remoteAgent("b-keyless", b.URL, "hidden")
		hidden := remoteAgent("hidden", b.URL)
		hidden.Credentials.KeyFile = keyFile
		c.Agents.Remote = []config.RemoteAgent{good, keyless, hidden}
		c.Auth.Keys = []config.AuthKey{user.Entry}
	})
	sid, _ := a.mustAs(t, user.Secret, "_cleveragents/session/create", map[string]any{})["session_id"].(string)
	got := a.mustAs(t, user.Secret, "_cleveragents/agent/call", map[string]any{
		"session_id": sid, "target_agent_id": "b-tools", "method": "echo", "params": map[string]any{"k": 1}})
	if got["agent_id"] != "b-tools" {
		t.Errorf("agent/call = %v", got)
	}
	// B refuses the keyless peer (-32105 there): peer_unavailable here;
	// its fallback "hidden" is out of the user's scopes, so it is skipped.
	r := a.as(t, user.Secret, "_cleveragents/agent/call", map[string]any{"session_id": sid, "target_agent_id": "b-keyless", "method": "echo"})
	if r.RPC.Error == nil || r.RPC.Error.Code != -32102 || r.RPC.Error.reason() != "peer_unavailable" {
		t.Errorf("keyless peer: %s, want -32102 peer_unavailable", r.Body)
	}
	wantRefused(t, a.as(t, user.Secret, "_cleveragents/agent/call", map[string]any{"session_id": sid, "target_agent_id": "hidden", "method": "echo"}),
		403, -32105, "scope_denied")
	for name, logs := range map[string]*logBuffer{"A": aLogs, "B": bLogs} {
		if strings.Contains(logs.String(), bKey.Secret) {
			t.Errorf("host %s logged the peer key", name)
		}
	}
}
