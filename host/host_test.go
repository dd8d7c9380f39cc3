package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// fixtures holds the hand-written test modules (see the .wat beside each);
// hostile.wasm has one export per misbehaviour plus a well-behaved "echo".
const fixtures = "internal/sandbox/testdata"

// toolsManifest is a well-behaved plugin built on the echo export.
const toolsManifest = `name: tools
version: 1.0.0
description: Well-behaved test skills
wasm: hostile.wasm
limits: {timeout: 10s, memory: 16MiB, output: 64KiB, concurrency: 4}
skills:
  - id: echo
    description: Returns its input unchanged
    function: echo
    examples: ['{"text":"hi"}']
  - id: strict-echo
    description: Echo that only takes {"n":<number>}
    function: echo
    input_schema: {type: object, properties: {n: {type: number}}, required: [n]}
`

// httpClient is the tests' client; its idle connections can be closed
// before goroutines are counted.
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

// testHost is a real host served over HTTP on 127.0.0.1.
type testHost struct {
	URL     string
	Plugins string
	h       *host.Host
}

// rpcError is a JSON-RPC error object as received.
type rpcError struct {
	Code    int            `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

func (e *rpcError) reason() string {
	if e == nil {
		return ""
	}
	r, _ := e.Data["reason"].(string)
	return r
}

// rpcResponse is one JSON-RPC response as received.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *rpcError       `json:"error"`
}

// quietLogger keeps the host's logs out of the test output.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// mustPlugin writes a plugin folder dir/name with manifest and a copy of
// hostile.wasm.
func mustPlugin(t *testing.T, dir, name, manifest string) {
	t.Helper()
	mustPluginWasm(t, dir, name, "hostile.wasm", manifest)
}

// mustPluginWasm writes a plugin folder dir/name with manifest and a copy of
// the fixture module file.
func mustPluginWasm(t *testing.T, dir, name, file, manifest string) {
	t.Helper()
	wasm, err := os.ReadFile(filepath.Join(fixtures, file))
	if err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, name)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, file), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "plugin.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustHost starts a host on 127.0.0.1:0 serving pluginDir with a fresh data
// directory (defaults otherwise: no keys, loopback clients only).
func mustHost(t *testing.T, pluginDir string) *testHost {
	t.Helper()
	th, _ := mustHostWith(t, pluginDir, nil)
	return th
}

// post sends body to path and returns the status and response bytes.
func (th *testHost) post(ctx context.Context, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, th.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// tryCall makes one JSON-RPC call; safe from any goroutine.
func (th *testHost) tryCall(ctx context.Context, method string, params any) (rpcResponse, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return rpcResponse{}, err
	}
	_, b, err := th.post(ctx, "/rpc", body)
	if err != nil {
		return rpcResponse{}, err
	}
	var r rpcResponse
	if err := json.Unmarshal(b, &r); err != nil {
		return rpcResponse{}, fmt.Errorf("response %q: %w", b, err)
	}
	return r, nil
}

func (th *testHost) call(t *testing.T, method string, params any) rpcResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := th.tryCall(ctx, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return r
}

// mustResult calls method, fails on an error response and decodes the result.
func (th *testHost) mustResult(t *testing.T, method string, params any) map[string]any {
	t.Helper()
	r := th.call(t, method, params)
	if r.Error != nil {
		t.Fatalf("%s: error %d %s %v", method, r.Error.Code, r.Error.Message, r.Error.Data)
	}
	var out map[string]any
	if err := json.Unmarshal(r.Result, &out); err != nil {
		t.Fatalf("%s: result %s: %v", method, r.Result, err)
	}
	return out
}

// wantError checks the code and reason of an error response.
func wantError(t *testing.T, r rpcResponse, code int, reasons ...string) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("got result %s, want error %d %v", r.Result, code, reasons)
	}
	if r.Error.Code != code {
		t.Errorf("code = %d (%s, %v), want %d", r.Error.Code, r.Error.Message, r.Error.Data, code)
	}
	if len(reasons) > 0 && !slices.Contains(reasons, r.Error.reason()) {
		t.Errorf("reason = %q, want one of %v", r.Error.reason(), reasons)
	}
	for _, k := range []string{"request_id", "timestamp", "reason"} {
		if s, _ := r.Error.Data[k].(string); s == "" {
			t.Errorf("error data has no %s: %v", k, r.Error.Data)
		}
	}
}

func (th *testHost) mustSession(t *testing.T) string {
	t.Helper()
	id, _ := th.mustResult(t, "_cleveragents/session/create", map[string]any{})["session_id"].(string)
	if id == "" {
		t.Fatal("session/create returned no session_id")
	}
	return id
}

// get fetches path and returns the response with its body read.
func (th *testHost) get(t *testing.T, path string) (*http.Response, []byte) {
	t.Helper()
	resp, err := httpClient.Get(th.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// waitFor polls cond until it holds (true) or limit passes (false).
func waitFor(limit time.Duration, cond func() bool) bool { return testutil.Poll(limit, cond) }

// TestHost drives one host through the `_cleveragents/*` methods, the HTTP
// endpoints and hot reload, all over real HTTP.
func TestHost(t *testing.T) {
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	th := mustHost(t, dir)

	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		id := th.mustSession(t)
		wantError(t, th.call(t, "_cleveragents/session/create", map[string]any{"session_id": id}), -32107, "session_exists")
		named := th.mustResult(t, "_cleveragents/session/create", map[string]any{"session_id": "my-session"})
		if named["session_id"] != "my-session" || named["status"] != "active" {
			t.Errorf("create with id = %v", named)
		}
		closed := th.mustResult(t, "_cleveragents/session/close", map[string]any{"session_id": id})
		if closed["status"] != "closed" {
			t.Errorf("close = %v", closed)
		}
		calls := map[string]map[string]any{
			"_cleveragents/context/set":   {"context_key": "k", "value": 1},
			"_cleveragents/context/get":   {"context_key": "k"},
			"_cleveragents/skill/execute": {"skill_id": "echo", "skill_params": map[string]any{}},
			"_cleveragents/agent/call":    {"target_agent_id": "tools", "method": "echo", "params": map[string]any{}},
		}
		for method, params := range calls {
			for _, sid := range []string{id, "no-such-session"} {
				params["session_id"] = sid
				r := th.call(t, method, params)
				wantError(t, r, -32100, "session_closed", "session_not_found")
				if r.Error != nil && r.Error.Data["session_id"] != sid {
					t.Errorf("%s: error data session_id = %v, want %s", method, r.Error.Data["session_id"], sid)
				}
			}
		}
	})

	t.Run("context", func(t *testing.T) {
		t.Parallel()
		sid := th.mustSession(t)
		value := map[string]any{"user": "ada", "langs": []any{"go", "wat"}}
		th.mustResult(t, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "prefs", "value": value})
		got := th.mustResult(t, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "prefs"})
		if diff := cmp.Diff(value, got["value"]); diff != "" {
			t.Errorf("context value (-want +got):\n%s", diff)
		}
		wantError(t, th.call(t, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "absent"}), -32602, "context_not_found")
		other := th.mustSession(t)
		wantError(t, th.call(t, "_cleveragents/context/get", map[string]any{"session_id": other, "context_key": "prefs"}), -32602, "context_not_found")

		th.mustResult(t, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "short", "value": "soon gone", "ttl": 1})
		var last rpcResponse
		gone := waitFor(5*time.Second, func() bool {
			last = th.call(t, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "short"})
			return last.Error != nil
		})
		if !gone {
			t.Fatalf("context with ttl 1 still readable after 5 s: %s", last.Result)
		}
		wantError(t, last, -32602, "context_expired", "context_not_found")
	})

	t.Run("skills", func(t *testing.T) {
		t.Parallel()
		sid := th.mustSession(t)
		in := map[string]any{"text": "hello", "n": 3.0}
		res := th.mustResult(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "echo", "skill_params": in})
		if diff := cmp.Diff(in, res["output"]); diff != "" {
			t.Errorf("echo output (-want +got):\n%s", diff)
		}
		if res["skill_id"] != "echo" || res["status"] != "success" {
			t.Errorf("skill/execute = %v", res)
		}
		if ms, ok := res["execution_time_ms"].(float64); !ok || ms < 0 {
			t.Errorf("execution_time_ms = %v", res["execution_time_ms"])
		}
		acct, _ := res["accounting"].(map[string]any)
		if acct["plugin"] != "tools" || acct["plugin_version"] != "1.0.0" || !slices.Contains([]string{"fresh", "reused"}, fmt.Sprint(acct["instance"])) {
			t.Errorf("accounting = %v", acct)
		}

		ag := th.mustResult(t, "_cleveragents/agent/call", map[string]any{"session_id": sid, "target_agent_id": "tools", "method": "echo", "params": in})
		if diff := cmp.Diff(in, ag["result"]); diff != "" || ag["agent_id"] != "tools" || ag["method"] != "echo" {
			t.Errorf("agent/call = %v (-want +got result):\n%s", ag, diff)
		}
		wantError(t, th.call(t, "_cleveragents/agent/call", map[string]any{"session_id": sid, "target_agent_id": "nobody", "method": "echo", "params": in}), -32102)
		wantError(t, th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "no-such-skill", "skill_params": in}), -32602, "unknown_skill")
		wantError(t, th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "strict-echo", "skill_params": map[string]any{"n": "three"}}), -32602, "schema")
		ok := th.mustResult(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "strict-echo", "skill_params": map[string]any{"n": 3}})
		if diff := cmp.Diff(map[string]any{"n": 3.0}, ok["output"]); diff != "" {
			t.Errorf("strict-echo output (-want +got):\n%s", diff)
		}
	})

	t.Run("batch", func(t *testing.T) {
		t.Parallel()
		sid := th.mustSession(t)
		batch := fmt.Sprintf(`[
			{"jsonrpc":"2.0","id":"a","method":"_cleveragents/skill/execute","params":{"session_id":%[1]q,"skill_id":"echo","skill_params":{"i":1}}},
			{"jsonrpc":"2.0","method":"_cleveragents/agent/notify","params":{"session_id":%[1]q,"event":"ping"}},
			{"jsonrpc":"2.0","id":2,"method":"_cleveragents/context/get","params":{"session_id":%[1]q,"context_key":"nothing"}},
			{"jsonrpc":"2.0","method":"_cleveragents/context/set","params":{"session_id":%[1]q,"context_key":"via-notification","value":true}},
			{"jsonrpc":"2.0","id":3,"method":"no/such/method"}
		]`, sid)
		status, body, err := th.post(context.Background(), "/rpc", []byte(batch))
		if err != nil || status != http.StatusOK {
			t.Fatalf("batch: %d %v %s", status, err, body)
		}
		var got []rpcResponse
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("batch response %s: %v", body, err)
		}
		byID := map[string]rpcResponse{}
		for _, r := range got {
			byID[string(r.ID)] = r
		}
		if len(got) != 3 || len(byID) != 3 {
			t.Fatalf("batch of 3 requests and 2 notifications got %d responses: %s", len(got), body)
		}
		if r := byID[`"a"`]; r.Error != nil || !strings.Contains(string(r.Result), `"output":{"i":1}`) {
			t.Errorf("batch echo = %s %+v", r.Result, r.Error)
		}
		wantError(t, byID["2"], -32602, "context_not_found")
		wantError(t, byID["3"], -32601)
		// A batch of notifications only gets no response body at all.
		notes := fmt.Sprintf(`[{"jsonrpc":"2.0","method":"_cleveragents/agent/notify","params":{"session_id":%q,"event":"a"}},
			{"jsonrpc":"2.0","method":"_cleveragents/agent/notify","params":{"event":"b"}}]`, sid)
		if status, body, err := th.post(context.Background(), "/rpc", []byte(notes)); err != nil || len(bytes.TrimSpace(body)) != 0 || status >= 300 {
			t.Errorf("notification-only batch: %d %q %v, want an empty 2xx response", status, body, err)
		}
		// The notification ran: its value is readable.
		v := th.mustResult(t, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "via-notification"})
		if v["value"] != true {
			t.Errorf("value set by a notification = %v", v["value"])
		}
	})

	t.Run("health and metrics", func(t *testing.T) {
		t.Parallel()
		resp, body := th.get(t, "/health")
		var health map[string]any
		if err := json.Unmarshal(body, &health); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/health: %d %s", resp.StatusCode, body)
		}
		if health["status"] != "healthy" || health["version"] != "9.9.9-test" || health["timestamp"] == nil {
			t.Errorf("/health = %v", health)
		}
		th.mustSession(t) // at least one counted call
		resp, body = th.get(t, "/metrics")
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "skillhost_rpc_calls_total") {
			t.Errorf("/metrics: %d, skillhost_rpc_calls_total missing", resp.StatusCode)
		}
	})

	t.Run("hot reload", func(t *testing.T) {
		// Not parallel: it changes the card the other subtests may read.
		resp, _ := th.get(t, "/.well-known/agent-card.json")
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Error("the agent card has no ETag")
		}
		sid := th.mustSession(t)
		mustPlugin(t, th.Plugins, "late", strings.NewReplacer("name: tools", "name: late",
			"id: echo", "id: late-echo", "id: strict-echo", "id: late-strict").Replace(toolsManifest))
		var last rpcResponse
		if !waitFor(10*time.Second, func() bool {
			last = th.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "late-echo", "skill_params": map[string]any{"x": 1}})
			return last.Error == nil
		}) {
			t.Fatalf("new plugin not callable 10 s after it was copied: %+v", last.Error)
		}
		var body []byte
		if !waitFor(10*time.Second, func() bool {
			resp, body = th.get(t, "/.well-known/agent-card.json")
			return resp.Header.Get("ETag") != etag
		}) {
			t.Errorf("card ETag still %q 10 s after the reload", etag)
		}
		req, _ := http.NewRequest(http.MethodGet, th.URL+"/.well-known/agent-card.json", nil)
		req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
		cached, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		cached.Body.Close()
		if cached.StatusCode != http.StatusNotModified {
			t.Errorf("card with If-None-Match of the current ETag: %s, want 304", cached.Status)
		}
		var card struct {
			Skills []struct {
				ID string `json:"id"`
			} `json:"skills"`
		}
		if err := json.Unmarshal(body, &card); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range card.Skills {
			ids = append(ids, s.ID)
		}
		if !slices.Contains(ids, "late-echo") || !slices.Contains(ids, "echo") {
			t.Errorf("card skills after reload = %v, want late-echo and echo", ids)
		}
	})
}
