package remote_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/remote"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// rpcCall is one call the fake peer received.
type rpcCall struct {
	method string
	params map[string]any
}

// reply is what the fake peer does with one agent/call.
type reply struct {
	status int             // HTTP status (0: 200)
	result json.RawMessage // JSON-RPC result
	code   int             // JSON-RPC error code (0: none)
	reason string          // its data.reason
	hang   bool            // wait until the client goes away
	reset  bool            // reset the connection without an answer
	body   []byte          // raw body instead of JSON-RPC
}

// Replies the fake peer is told to give.
var (
	// okReply answers either method a peer is sent: skill/execute's
	// {skill_id, status, output} and agent/call's {agent_id, method, result}.
	okReply = reply{result: json.RawMessage(`{"skill_id":"m","status":"success","output":{"ok":true},` +
		`"agent_id":"x","method":"m","result":{"ok":true},"execution_time_ms":1}`)}
	hangReply = reply{hang: true}
)

func statusReply(s int) reply                { return reply{status: s} }
func errReply(code int, reason string) reply { return reply{code: code, reason: reason} }

// fakePeer is a real HTTP server on 127.0.0.1 that speaks enough of
// skillhost's protocol (its card with the cleveragents extension,
// session/create|close, agent/call) and answers each agent/call as script
// says, counting what reached it.
type fakePeer struct {
	srv *httptest.Server

	mu            sync.Mutex
	script        func(n int) reply // n: 1-based agent/call count
	calls         int
	cards         int
	notModified   int
	opened        int
	closed        []string
	headers       []http.Header // of agent/call requests
	timeouts      []float64     // agent/call timeout params
	sessionsSeen  []string      // agent/call session ids
	requests      []rpcCall     // the calls (skill/execute or agent/call), in order
	forgetSession bool          // answer -32100 once for every known session
	cardJSON      func(base string) string
}

func newFakePeer(t *testing.T, script func(n int) reply) *fakePeer {
	t.Helper()
	p := &fakePeer{script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/agent-card.json", p.card)
	mux.HandleFunc("POST /rpc", p.rpc)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *fakePeer) setScript(s func(n int) reply) {
	p.mu.Lock()
	p.script = s
	p.mu.Unlock()
}

func (p *fakePeer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// skillhostCard is a v1.0 card with the cleveragents extension.
func skillhostCard(base string) string {
	return `{"name":"fake","description":"a fake skillhost","version":"1.0.0",
	 "supportedInterfaces":[{"url":"` + base + `/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
	 "capabilities":{"extensions":[{"uri":"https://skillhost.dev/ext/cleveragents/v1"}]},
	 "defaultInputModes":["application/json"],"defaultOutputModes":["application/json"],"skills":[]}`
}

func (p *fakePeer) card(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.cards++
	cardJSON := p.cardJSON
	if r.Header.Get("If-None-Match") == `"v1"` {
		p.notModified++
		p.mu.Unlock()
		w.WriteHeader(http.StatusNotModified)
		return
	}
	p.mu.Unlock()
	if cardJSON == nil {
		cardJSON = skillhostCard
	}
	w.Header().Set("ETag", `"v1"`)
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, cardJSON(p.srv.URL))
}

func (p *fakePeer) rpc(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params map[string]any  `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	write := func(v map[string]any) {
		v["jsonrpc"], v["id"] = "2.0", req.ID
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	p.mu.Lock()
	switch req.Method {
	case "_cleveragents/session/create":
		p.opened++
		id := "peer-s" + string(rune('0'+p.opened))
		p.mu.Unlock()
		write(map[string]any{"result": map[string]any{"session_id": id, "status": "active"}})
		return
	case "_cleveragents/session/close":
		p.closed = append(p.closed, req.Params["session_id"].(string))
		p.mu.Unlock()
		write(map[string]any{"result": map[string]any{"status": "closed"}})
		return
	}
	sid, _ := req.Params["session_id"].(string)
	if p.forgetSession {
		p.forgetSession = false
		p.mu.Unlock()
		write(map[string]any{"error": map[string]any{"code": -32100, "message": "Session not found", "data": map[string]any{"reason": "session_not_found"}}})
		return
	}
	p.calls++
	n := p.calls
	p.headers = append(p.headers, r.Header.Clone())
	if ms, ok := req.Params["timeout"].(float64); ok {
		p.timeouts = append(p.timeouts, ms)
	}
	p.sessionsSeen = append(p.sessionsSeen, sid)
	p.requests = append(p.requests, rpcCall{method: req.Method, params: req.Params})
	rep := p.script(n)
	p.mu.Unlock()
	switch {
	case rep.hang:
		<-r.Context().Done()
	case rep.reset:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	case rep.body != nil:
		w.Write(rep.body)
	case rep.status != 0 && rep.status != http.StatusOK:
		w.WriteHeader(rep.status)
	case rep.code != 0:
		write(map[string]any{"error": map[string]any{"code": rep.code, "message": "scripted", "data": map[string]any{"reason": rep.reason}}})
	default:
		write(map[string]any{"result": rep.result})
	}
}

// downURL is the URL of a port nothing listens on (connection refused).
func downURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// fastRetry is a retry policy that waits next to nothing.
var fastRetry = config.RemoteRetry{MaxAttempts: 3, InitialInterval: time.Millisecond, MaxInterval: 2 * time.Millisecond}

// peerConfig is a peer at url with fast retries and a breaker that does not
// open on its own.
func peerConfig(id, url string) config.RemoteAgent {
	return config.RemoteAgent{ID: id, URL: url, Retry: fastRetry, Breaker: config.RemoteBreaker{Failures: 1000}}
}

// recorder is an Observer that keeps what it saw.
type recorder struct {
	mu          sync.Mutex
	outcomes    []string
	transitions []string
}

func (r *recorder) Attempt(_, outcome string) {
	r.mu.Lock()
	r.outcomes = append(r.outcomes, outcome)
	r.mu.Unlock()
}

func (r *recorder) BreakerState(_, state string) {
	r.mu.Lock()
	r.transitions = append(r.transitions, state)
	r.mu.Unlock()
}

func (r *recorder) seen() ([]string, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.outcomes...), append([]string(nil), r.transitions...)
}

// mustPeers builds Peers; logs go to buf when it is not nil.
func mustPeers(t *testing.T, obs remote.Observer, buf *testutil.LogBuffer, cfgs ...config.RemoteAgent) *remote.Peers {
	t.Helper()
	opts := remote.Options{Observer: obs, Getenv: func(k string) string { return map[string]string{"PEER_KEY": "s3cret-env-key"}[k] }}
	if buf != nil {
		opts.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ps, err := remote.New(context.Background(), cfgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close(context.Background()) })
	return ps
}

// callCtx is a context for one test call: generous, the machine may be
// loaded.
func callCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testCancelAfterFirstCall returns a context canceled as soon as the peer
// has seen one agent/call.
func testCancelAfterFirstCall(t *testing.T, p *fakePeer) (context.Context, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(callCtx(t))
	go func() {
		dl, _ := ctx.Deadline() // callCtx's
		testutil.PollEvery(time.Until(dl), 5*time.Millisecond, func() bool { return p.count() > 0 || ctx.Err() != nil })
		cancel()
	}()
	return ctx, cancel
}
