package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// Issue 20, finding 6: every resource a client holds open has a per-key
// share of its host-wide cap. Each test drives key A to its share and shows
// A refused there (-32106 key_quota naming the share's config key) while
// key B is still served.

// hangingPeer is a skillhost-like A2A peer whose calls hang until release
// is closed: a relay plugin calling it is a task that runs (without burning
// a core) for as long as the test needs it.
func hangingPeer(t *testing.T, release <-chan struct{}) string {
	t.Helper()
	mux := http.NewServeMux()
	peer := httptest.NewServer(mux)
	t.Cleanup(peer.Close)
	mux.HandleFunc("GET /.well-known/agent-card.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"name":"hang","description":"","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],
			"capabilities":{"extensions":[{"uri":"https://skillhost.dev/ext/cleveragents/v1"}]},"skills":[]}`, peer.URL+"/rpc")
	})
	mux.HandleFunc("POST /rpc", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Method string `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Method == "_cleveragents/session/create" {
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{"session_id":"s"}}`)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	return peer.URL
}

// sharesHost serves tools (echo) and wait (a relay to a hanging peer: a
// task that stays running) with the keys; mutate sets the caps.
func sharesHost(t *testing.T, mutate func(*config.Config), keys ...apiKey) *testHost {
	t.Helper()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	mustPluginWasm(t, dir, "relay", "relay.wasm", strings.Replace(relayManifest("relay", "wait", "hang", "m", "hang"), "timeout: 10s", "timeout: 10m", 1))
	release := make(chan struct{})
	peer := hangingPeer(t, release)
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		for _, k := range keys {
			c.Auth.Keys = append(c.Auth.Keys, k.Entry)
		}
		c.Auth.Limits.Rate = "" // the shares are the point
		allowAgents(c)
		c.Policy.MaxTimeout = 10 * time.Minute
		c.Agents.Remote = []config.RemoteAgent{{ID: "hang", URL: peer, Timeout: 10 * time.Minute, AttemptTimeout: 10 * time.Minute}}
		mutate(c)
	})
	t.Cleanup(func() { close(release) }) // first: the waiting tasks end, then the host
	return th
}

// nthMessage is SendMessage's params for skill with a unique message id.
func nthMessage(skill string, n int) map[string]any {
	p := sendMessage(skill, map[string]any{"n": n})
	p["message"].(map[string]any)["messageId"] = fmt.Sprintf("m-%s-%d", skill, n)
	return p
}

// rpcStream is an open streaming response of /rpc (or a refusal).
type rpcStream struct {
	Status int
	First  string // the first SSE data line, or the whole body of a refusal
	close  func()
}

// openStream posts a streaming method (path /rpc, or a REST route with
// body params) and reads up to its first event; the stream stays open
// until the test ends.
func openStream(t *testing.T, th *testHost, key, path, method string, params any) rpcStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	body, _ := json.Marshal(params)
	if method != "" {
		body = rpcBody(method, params)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, th.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", path, method, err)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return rpcStream{Status: resp.StatusCode, First: string(b), close: cancel}
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			t.Cleanup(func() { _ = resp.Body.Close() })
			return rpcStream{Status: resp.StatusCode, First: data, close: func() { cancel(); _ = resp.Body.Close() }}
		}
	}
	resp.Body.Close()
	t.Fatalf("%s %s: the stream ended without an event (%v)", path, method, sc.Err())
	return rpcStream{}
}

// taskID is the id of the Task a stream's first event carries.
func (s rpcStream) taskID(t *testing.T) string {
	t.Helper()
	var ev struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(s.First), &ev); err != nil || ev.Result.Task.ID == "" {
		t.Fatalf("first event %s: no task", s.First)
	}
	return ev.Result.Task.ID
}

// wantQuota checks a refusal for a key's share: HTTP 429, -32106 key_quota
// (either data shape), the message naming the share's config key.
func wantQuota(t *testing.T, what string, status int, body, key string) {
	t.Helper()
	r := httpReply{Status: status, Body: []byte(body)}
	_ = json.Unmarshal(r.Body, &r.RPC)
	wantRefused(t, r, http.StatusTooManyRequests, -32106, "key_quota")
	if !strings.Contains(body, key) {
		t.Errorf("%s: the refusal does not name %s: %s", what, key, body)
	}
}

// GET /events: a key holds at most events.max_subscribers_per_key streams
// (its session tokens' included); another key still subscribes and gets
// its events.
func TestEventsStreamsShare(t *testing.T) {
	t.Parallel()
	a, b, ops := newKey(t, "a", "*"), newKey(t, "b", "*"), newKey(t, "ops", "method:admin", "method:metrics")
	th := sharesHost(t, func(c *config.Config) {
		c.Events.MaxSubscribers, c.Events.MaxSubscribersPerKey = 4, 2
	}, a, b, ops)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	created := th.mustAs(t, a.Secret, "_cleveragents/session/create", map[string]any{})
	for range 2 {
		if status, _, body := openEvents(t, ctx, th.URL, a.Secret, ""); status != http.StatusOK {
			t.Fatalf("A within its share: HTTP %d %s", status, body)
		}
	}
	status, _, body := openEvents(t, ctx, th.URL, a.Secret, "")
	wantQuota(t, "A past its share", status, body, "events.max_subscribers_per_key")
	status, _, body = openEvents(t, ctx, th.URL, created["session_token"].(string), "?session_id="+created["session_id"].(string))
	wantQuota(t, "A's session token", status, body, "events.max_subscribers_per_key")

	status, stream, body := openEvents(t, ctx, th.URL, b.Secret, "")
	if status != http.StatusOK {
		t.Fatalf("B while A sits at its share: HTTP %d %s", status, body)
	}
	sb := th.mustAs(t, b.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
	th.mustAs(t, b.Secret, "_cleveragents/agent/notify", map[string]any{"session_id": sb, "event": "for-b"})
	if got := stream.nextEvent(t); got != "for-b" {
		t.Errorf("B's stream got %q, want for-b", got)
	}

	// /metrics counts the use and the refusals; /admin/shares names the holders.
	families := mustMetrics(t, th, ops.Secret)
	if v := sample(families, "skillhost_share_in_use", map[string]string{"resource": "events_streams"}); v != 3 {
		t.Errorf("skillhost_share_in_use{events_streams} = %v, want 3", v)
	}
	if v := sample(families, "skillhost_share_refused_total", map[string]string{"resource": "events_streams", "cap": "share"}); v != 2 {
		t.Errorf("skillhost_share_refused_total{events_streams,share} = %v, want 2", v)
	}
	_, _, doc := th.getAs(t, ops.Secret, "/admin/shares", nil)
	var shares struct {
		Shares []struct {
			Resource string `json:"resource"`
			InUse    int    `json:"in_use"`
			Largest  []struct {
				Holder string `json:"holder"`
				Units  int    `json:"units"`
			} `json:"largest"`
		} `json:"shares"`
	}
	if err := json.Unmarshal(doc, &shares); err != nil {
		t.Fatalf("/admin/shares: %v: %s", err, doc)
	}
	found := false
	for _, s := range shares.Shares {
		if s.Resource == "events_streams" {
			found = true
			if s.InUse != 3 || len(s.Largest) != 2 || s.Largest[0].Holder != "key:a" || s.Largest[0].Units != 2 {
				t.Errorf("/admin/shares events_streams = %+v; want 3 in use, key:a holding 2 first", s)
			}
		}
	}
	if !found {
		t.Errorf("/admin/shares has no events_streams: %s", doc)
	}
}

// Task streams (SendStreamingMessage, SubscribeToTask, message/stream,
// the REST stream routes): a key holds at most a2a.max_streams_per_key; a
// refused stream starts no task; another key still streams its tasks.
func TestTaskStreamsShare(t *testing.T) {
	t.Parallel()
	a, b := newKey(t, "a", "*"), newKey(t, "b", "*")
	th := sharesHost(t, func(c *config.Config) {
		c.A2A.MaxStreams, c.A2A.MaxStreamsPerKey = 4, 2
	}, a, b)
	first := openStream(t, th, a.Secret, "/rpc", "SendStreamingMessage", nthMessage("wait", 1))
	openStream(t, th, a.Secret, "/rpc", "SendStreamingMessage", nthMessage("wait", 2))
	task := first.taskID(t)

	for _, tt := range []struct {
		name, path, method string
		params             any
	}{
		{"SendStreamingMessage", "/rpc", "SendStreamingMessage", nthMessage("wait", 3)},
		{"SubscribeToTask", "/rpc", "SubscribeToTask", map[string]any{"id": task}},
		{"REST message:stream", "/a2a/message:stream", "", nthMessage("wait", 4)},
		{"REST subscribe", "/a2a/tasks/" + task + ":subscribe", "", map[string]any{}},
	} {
		s := openStream(t, th, a.Secret, tt.path, tt.method, tt.params)
		if s.Status != http.StatusTooManyRequests || !strings.Contains(strings.ToLower(s.First), "key_quota") || !strings.Contains(s.First, "a2a.max_streams_per_key") {
			t.Errorf("A past its share, %s: HTTP %d %s; want 429 key_quota naming a2a.max_streams_per_key", tt.name, s.Status, s.First)
		}
	}
	// v0.3 clients read errors as stream events.
	legacy := map[string]any{"message": map[string]any{"messageId": "m-legacy", "role": "user", "kind": "message",
		"parts": []any{map[string]any{"kind": "data", "data": map[string]any{}}}, "metadata": map[string]any{"skillId": "wait"}}}
	if s := openStream(t, th, a.Secret, "/rpc", "message/stream", legacy); !strings.Contains(s.First, "key_quota") {
		t.Errorf("A past its share, message/stream: HTTP %d %s; want key_quota", s.Status, s.First)
	}
	if s := openStream(t, th, a.Secret, "/rpc", "tasks/resubscribe", map[string]any{"id": task}); !strings.Contains(s.First, "key_quota") {
		t.Errorf("A past its share, tasks/resubscribe: HTTP %d %s; want key_quota", s.Status, s.First)
	}
	list := th.mustAs(t, a.Secret, "ListTasks", map[string]any{})
	if tasks, _ := list["tasks"].([]any); len(tasks) != 2 {
		t.Errorf("A has %d tasks, want 2: a refused stream must not start one", len(tasks))
	}

	// B streams a task, and holds a waiting stream of its own.
	s := openStream(t, th, b.Secret, "/rpc", "SendStreamingMessage", nthMessage("echo", 5))
	if s.Status != http.StatusOK {
		t.Fatalf("B while A sits at its share: HTTP %d %s", s.Status, s.First)
	}
	if sub := openStream(t, th, b.Secret, "/rpc", "SendStreamingMessage", nthMessage("wait", 6)); sub.Status != http.StatusOK {
		t.Errorf("B's waiting stream: HTTP %d %s", sub.Status, sub.First)
	}

	// A stream that closes gives its unit back.
	first.close()
	if !waitFor(30*time.Second, func() bool {
		s := openStream(t, th, a.Secret, "/rpc", "SubscribeToTask", map[string]any{"id": task})
		return s.Status == http.StatusOK
	}) {
		t.Error("A's closed stream was not given back")
	}
}

// Running calls: a key holds at most auth.limits.max_concurrent_calls, and
// every principal together at most rpc.max_running_calls: past it even a
// key under its share waits (pool_saturated).
func TestRunningCallsShare(t *testing.T) {
	t.Parallel()
	a, b, c := newKey(t, "a", "*"), newKey(t, "b", "*"), newKey(t, "c", "*")
	th := sharesHost(t, func(c *config.Config) {
		c.RPC.MaxRunningCalls, c.Auth.Limits.MaxConcurrentCalls = 3, 2
	}, a, b, c)
	start := func(key apiKey, n int) httpReply {
		p := nthMessage("wait", n)
		p["configuration"] = map[string]any{"returnImmediately": true}
		return th.as(t, key.Secret, "SendMessage", p)
	}
	for n := range 2 {
		if r := start(a, n); r.Status != http.StatusOK || r.RPC.Error != nil {
			t.Fatalf("A's task %d: HTTP %d %s", n, r.Status, r.Body)
		}
	}
	wantRefused(t, start(a, 2), http.StatusTooManyRequests, -32106, "rate_limited")
	if r := start(b, 3); r.Status != http.StatusOK || r.RPC.Error != nil {
		t.Fatalf("B while A sits at its share: HTTP %d %s", r.Status, r.Body)
	}
	r := start(c, 4)
	wantRefused(t, r, http.StatusOK, -32106, "pool_saturated")
	if !strings.Contains(string(r.Body), "rpc.max_running_calls") {
		t.Errorf("the host-wide refusal does not name rpc.max_running_calls: %s", r.Body)
	}
}
