package host_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/config"
)

// busyManifest loops for up to 4 s: calls that stay running.
const busyManifest = `name: busy
version: 1.0.0
description: Loops until its deadline
wasm: hostile.wasm
limits: {timeout: 4s, memory: 16MiB, output: 64KiB, concurrency: 8}
skills:
  - {id: busy-loop, function: loop, description: Never returns}
`

// authKeys are the keys of the authenticated test host.
type authKeys struct {
	admin, other, echoer, planner, metrics, slow, quota, busy, bytes, tasks, tokens apiKey
}

// mustAuthHost serves tools and busy with API keys configured.
func mustAuthHost(t *testing.T) (*testHost, *logBuffer, authKeys) {
	t.Helper()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	mustPlugin(t, dir, "busy", busyManifest)
	k := authKeys{
		admin:   newKey(t, "admin", "*"),
		other:   newKey(t, "other", "*"),
		echoer:  newKey(t, "echoer", "skill:echo"),
		planner: newKey(t, "planner", "method:_cleveragents/plan/*", "skill:echo"),
		metrics: newKey(t, "metrics", "method:metrics"),
		slow:    newKey(t, "slow", "*"),
		quota:   newKey(t, "quota", "*"),
		busy:    newKey(t, "busy", "agent:busy", "skill:echo"),
		bytes:   newKey(t, "bytes", "*"),
		tasks:   newKey(t, "tasks", "agent:busy"),
		tokens:  newKey(t, "tokens", "skill:echo"), // as echoer, for the session-token subtest alone
	}
	k.slow.Entry.Rate = "3/h"
	th, logs := mustHostWith(t, dir, func(c *config.Config) {
		for _, key := range []apiKey{k.admin, k.other, k.echoer, k.planner, k.metrics, k.slow, k.quota, k.busy, k.bytes, k.tasks, k.tokens} {
			c.Auth.Keys = append(c.Auth.Keys, key.Entry)
		}
		c.Auth.Limits.MaxOpenSessions = 3
		c.Auth.Limits.MaxConcurrentCalls = 2
		c.Auth.Limits.MaxContextBytes = 4096
	})
	return th, logs, k
}

// The "done when" list: no key → 401; a wrong key of the same and of
// a different length → 401; a valid key out of scope → 403; one key cannot
// see another's session, plan or task; a revoked session token is refused;
// rate limit → 429 / -32106.
func TestAuthOverHTTP(t *testing.T) {
	th, logs, k := mustAuthHost(t)

	t.Run("credentials", func(t *testing.T) {
		t.Parallel()
		wrongSame := strings.Repeat("x", len(k.admin.Secret))
		tests := []struct {
			name    string
			headers map[string]string
			url     string
			status  int
			reason  string
		}{
			{"no key", nil, "/rpc", 401, "unauthenticated"},
			{"wrong key, same length", map[string]string{"Authorization": "Bearer " + wrongSame}, "/rpc", 401, "invalid_credentials"},
			{"wrong key, other length", map[string]string{"Authorization": "Bearer short"}, "/rpc", 401, "invalid_credentials"},
			{"valid key plus a byte", map[string]string{"X-API-Key": k.admin.Secret + "x"}, "/rpc", 401, "invalid_credentials"},
			{"key in the query string", nil, "/rpc?api_key=" + k.admin.Secret, 401, "unauthenticated"},
			{"two different credentials", map[string]string{"Authorization": "Bearer " + k.admin.Secret, "X-API-Key": k.echoer.Secret}, "/rpc", 401, "invalid_credentials"},
			{"basic scheme", map[string]string{"Authorization": "Basic " + k.admin.Secret}, "/rpc", 401, "invalid_credentials"},
			{"lower-case header names", map[string]string{"authorization": "bearer " + k.admin.Secret}, "/rpc", 200, ""},
			{"odd-case X-API-Key", map[string]string{"x-API-kEy": k.admin.Secret}, "/rpc", 200, ""},
			{"odd-case header, wrong key", map[string]string{"X-Api-Key": wrongSame}, "/rpc", 401, "invalid_credentials"},
			{"events without a key", nil, "/events", 401, "unauthenticated"},
		}
		for _, tt := range tests {
			r, err := send(context.Background(), httpClient, th.URL+tt.url, tt.headers, rpcBody("_cleveragents/session/create", map[string]any{}))
			if err != nil {
				t.Fatal(err)
			}
			if tt.status == 200 {
				if r.Status != 200 || r.RPC.Error != nil {
					t.Errorf("%s: HTTP %d %s", tt.name, r.Status, r.Body)
				}
				continue
			}
			wantRefused(t, r, tt.status, -32105, tt.reason)
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), `Bearer realm="skillhost"`) {
				t.Errorf("%s: WWW-Authenticate = %q", tt.name, r.Header.Get("WWW-Authenticate"))
			}
		}
	})

	t.Run("public routes", func(t *testing.T) {
		t.Parallel()
		for _, path := range []string{"/health", "/.well-known/agent-card.json", "/agents/tools/.well-known/agent-card.json"} {
			if resp, body := th.get(t, path); resp.StatusCode != 200 {
				t.Errorf("GET %s without a key: %d %s", path, resp.StatusCode, body)
			}
		}
		_, body := th.get(t, "/.well-known/agent-card.json")
		var card map[string]any
		if err := json.Unmarshal(body, &card); err != nil {
			t.Fatal(err)
		}
		if _, ok := card["securitySchemes"].(map[string]any)["apiKey"]; !ok {
			t.Errorf("card does not describe the API key scheme: %v", card["securitySchemes"])
		}
		for key, want := range map[string]int{"": 401, k.echoer.Secret: 403, k.metrics.Secret: 200, k.admin.Secret: 200} {
			req, _ := http.NewRequest(http.MethodGet, th.URL+"/metrics", nil)
			if key != "" {
				req.Header.Set("X-API-Key", key)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET /metrics: %d, want %d", resp.StatusCode, want)
			}
		}
	})

	t.Run("scopes", func(t *testing.T) {
		t.Parallel()
		sid := th.mustAs(t, k.echoer.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
		th.mustAs(t, k.echoer.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "echo", "skill_params": map[string]any{}})
		out := th.as(t, k.echoer.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "strict-echo", "skill_params": map[string]any{"n": 1}})
		wantRefused(t, out, 403, -32105, "scope_denied")
		wantRefused(t, th.as(t, k.echoer.Secret, "_cleveragents/agent/call", map[string]any{"session_id": sid, "target_agent_id": "tools", "method": "strict-echo", "params": map[string]any{"n": 1}}), 403, -32105, "scope_denied")
		wantRefused(t, th.as(t, k.echoer.Secret, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_definition": planOf("echo")}), 403, -32105, "scope_denied")
		wantRefused(t, th.as(t, k.metrics.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": "x", "skill_id": "echo"}), 403, -32105, "scope_denied")
		msg := sendMessage("strict-echo", map[string]any{"n": 1})
		wantRefused(t, th.as(t, k.echoer.Secret, "SendMessage", msg), 403, -32105, "scope_denied")

		psid := th.mustAs(t, k.planner.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
		th.mustAs(t, k.planner.Secret, "_cleveragents/plan/create", map[string]any{"session_id": psid, "plan_id": "p1", "plan_definition": planOf("echo")})
		th.mustAs(t, k.planner.Secret, "_cleveragents/plan/execute", map[string]any{"session_id": psid, "plan_id": "p1"})
		var status map[string]any
		if !waitFor(30*time.Second, func() bool {
			status = th.mustAs(t, k.planner.Secret, "_cleveragents/plan/status", map[string]any{"session_id": psid, "plan_id": "p1"})
			return status["status"] != "executing"
		}) || status["status"] != "completed" {
			t.Errorf("the planner's plan, run as its key: %v", status)
		}
		r := th.as(t, k.planner.Secret, "_cleveragents/plan/create", map[string]any{"session_id": psid, "plan_id": "p2", "plan_definition": planOf("strict-echo")})
		wantRefused(t, r, 403, -32105, "scope_denied")

		// A batch authorises each element: the allowed one runs, the other
		// is refused in place, and the HTTP status stays 200.
		batch := `[` + string(rpcBody("_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "echo", "skill_params": map[string]any{"a": 1}})) + `,` +
			strings.Replace(string(rpcBody("_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "strict-echo", "skill_params": map[string]any{"n": 1}})), `"id":1`, `"id":2`, 1) + `]`
		br, err := send(context.Background(), httpClient, th.URL+"/rpc", map[string]string{"X-API-Key": k.echoer.Secret}, []byte(batch))
		if err != nil {
			t.Fatal(err)
		}
		var elems []rpcResponse
		if err := json.Unmarshal(br.Body, &elems); err != nil || br.Status != 200 || len(elems) != 2 {
			t.Fatalf("batch: HTTP %d %s", br.Status, br.Body)
		}
		if elems[0].Error != nil || elems[1].Error == nil || elems[1].Error.reason() != "scope_denied" {
			t.Errorf("batch elements: %s", br.Body)
		}
		audits := logs.lines(`"audit: request refused"`, `"key_id":"echoer"`, `"reason":"scope_denied"`)
		if len(audits) < 5 {
			t.Errorf("%d audit lines for echoer's refusals, want at least 5:\n%s", len(audits), strings.Join(audits, "\n"))
		}
		for _, line := range audits {
			if !strings.Contains(line, `"request_id":"`) || !strings.Contains(line, `"remote":"127.0.0.1:`) {
				t.Errorf("audit line without request id or remote address: %s", line)
			}
		}
	})

	t.Run("ownership", func(t *testing.T) {
		t.Parallel()
		a, b := k.admin.Secret, k.other.Secret
		sa := th.mustAs(t, a, "_cleveragents/session/create", map[string]any{"session_id": "owned-by-admin"})["session_id"]
		sb := th.mustAs(t, b, "_cleveragents/session/create", map[string]any{})["session_id"]
		th.mustAs(t, a, "_cleveragents/context/set", map[string]any{"session_id": sa, "context_key": "secret", "value": "admin's"})
		th.mustAs(t, a, "_cleveragents/plan/create", map[string]any{"session_id": sa, "plan_id": "admin-plan", "plan_definition": planOf("echo")})
		task := th.mustAs(t, a, "SendMessage", sendMessage("echo", map[string]any{"secret": "admin's input"}))["task"].(map[string]any)
		taskID := task["id"].(string)

		missing := th.as(t, b, "_cleveragents/context/get", map[string]any{"session_id": "no-such-session", "context_key": "secret"})
		foreign := th.as(t, b, "_cleveragents/context/get", map[string]any{"session_id": sa, "context_key": "secret"})
		wantRefused(t, foreign, 200, -32100, "session_not_found")
		if foreign.RPC.Error.Message != missing.RPC.Error.Message {
			t.Errorf("another key's session answers %q, a missing one %q: they must be indistinguishable", foreign.RPC.Error.Message, missing.RPC.Error.Message)
		}
		for method, params := range map[string]map[string]any{
			"_cleveragents/context/set":    {"session_id": sa, "context_key": "x", "value": 1},
			"_cleveragents/skill/execute":  {"session_id": sa, "skill_id": "echo", "skill_params": map[string]any{}},
			"_cleveragents/session/close":  {"session_id": sa},
			"_cleveragents/plan/status":    {"session_id": sa, "plan_id": "admin-plan"},
			"_cleveragents/plan/execute":   {"session_id": sa, "plan_id": "admin-plan"},
			"_cleveragents/session/create": {"session_id": sa},
			"_cleveragents/plan/cancel":    {"session_id": sa, "plan_id": "admin-plan"},
			"_cleveragents/agent/call":     {"session_id": sa, "target_agent_id": "tools", "method": "echo"},
			"_cleveragents/context/get":    {"session_id": sa, "context_key": "secret"},
			"_cleveragents/plan/create":    {"session_id": sa, "plan_definition": planOf("echo")},
			"_cleveragents/agent/notify":   {"session_id": sa, "event": "e"},
		} {
			r := th.as(t, b, method, params)
			if method == "_cleveragents/session/create" {
				wantRefused(t, r, 200, -32107, "session_exists") // ids are global; the session stays hidden
				continue
			}
			wantRefused(t, r, 200, -32100, "session_not_found")
		}
		wantRefused(t, th.as(t, b, "_cleveragents/plan/status", map[string]any{"session_id": sb, "plan_id": "admin-plan"}), 200, -32101, "plan_not_found")
		for _, method := range []string{"GetTask", "CancelTask"} {
			wantRefused(t, th.as(t, b, method, map[string]any{"id": taskID}), 200, -32001, "TASK_NOT_FOUND")
		}
		wantRefused(t, th.as(t, b, "tasks/get", map[string]any{"id": taskID}), 200, -32001, "task_not_found")
		wantRefused(t, th.as(t, b, "_cleveragents/task/verify", map[string]any{"id": taskID}), 200, -32001, "task_not_found")
		if got := th.mustAs(t, b, "ListTasks", map[string]any{}); got["totalSize"] != nil && got["totalSize"] != 0.0 {
			t.Errorf("another key lists %v tasks: %v", got["totalSize"], got)
		}
		mine := th.mustAs(t, a, "ListTasks", map[string]any{})
		if tasks, _ := mine["tasks"].([]any); len(tasks) == 0 || !strings.Contains(mustJSON(t, tasks), taskID) {
			t.Errorf("the owner does not list its task: %v", mine)
		}
		got := th.mustAs(t, a, "_cleveragents/context/get", map[string]any{"session_id": sa, "context_key": "secret"})
		if got["value"] != "admin's" {
			t.Errorf("the owner's value after the other key's attempts: %v", got)
		}
	})

	t.Run("session token", func(t *testing.T) {
		t.Parallel()
		created := th.mustAs(t, k.tokens.Secret, "_cleveragents/session/create", map[string]any{})
		sid, token := created["session_id"].(string), created["session_token"].(string)
		other := th.mustAs(t, k.tokens.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
		if !strings.HasPrefix(token, "skt_") {
			t.Fatalf("session/create with a key returned token %q", token)
		}
		th.mustAs(t, token, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "k", "value": 1})
		th.mustAs(t, token, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "echo", "skill_params": map[string]any{}})
		wantRefused(t, th.as(t, token, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "strict-echo", "skill_params": map[string]any{"n": 1}}), 403, -32105, "scope_denied")
		wantRefused(t, th.as(t, token, "_cleveragents/context/get", map[string]any{"session_id": other, "context_key": "k"}), 403, -32105, "scope_denied")
		wantRefused(t, th.as(t, token, "_cleveragents/session/create", map[string]any{}), 403, -32105, "scope_denied")
		wantRefused(t, th.as(t, token, "ListTasks", map[string]any{}), 403, -32105, "scope_denied")
		th.mustAs(t, token, "_cleveragents/session/close", map[string]any{"session_id": sid})
		wantRefused(t, th.as(t, token, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "k"}), 401, -32105, "token_revoked")
		forged := token[:len(token)-4] + "AAAA"
		wantRefused(t, th.as(t, forged, "_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "k"}), 401, -32105, "invalid_credentials")
	})

	t.Run("rate limit", func(t *testing.T) {
		t.Parallel()
		for i := range 3 {
			if r := th.as(t, k.slow.Secret, "ListTasks", map[string]any{}); r.Status != 200 || r.RPC.Error != nil {
				t.Fatalf("call %d within the rate: HTTP %d %s", i, r.Status, r.Body)
			}
		}
		r := th.as(t, k.slow.Secret, "ListTasks", map[string]any{})
		wantRefused(t, r, 429, -32106, "rate_limited")
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || s > 3600 {
			t.Errorf("Retry-After = %q, want seconds until the next token", r.Header.Get("Retry-After"))
		}
		r = th.as(t, k.slow.Secret, "_cleveragents/session/create", map[string]any{})
		wantRefused(t, r, 429, -32106, "rate_limited")
		if r := th.as(t, k.admin.Secret, "ListTasks", map[string]any{}); r.Status != 200 {
			t.Errorf("another key is limited too: HTTP %d", r.Status)
		}
	})

	t.Run("open sessions cap", func(t *testing.T) {
		t.Parallel()
		var ids []any
		for range 3 {
			ids = append(ids, th.mustAs(t, k.quota.Secret, "_cleveragents/session/create", map[string]any{})["session_id"])
		}
		wantRefused(t, th.as(t, k.quota.Secret, "_cleveragents/session/create", map[string]any{}), 429, -32106, "key_quota")
		th.mustAs(t, k.quota.Secret, "_cleveragents/session/close", map[string]any{"session_id": ids[0]})
		th.mustAs(t, k.quota.Secret, "_cleveragents/session/create", map[string]any{})
	})

	t.Run("context bytes cap", func(t *testing.T) {
		t.Parallel()
		value := strings.Repeat("v", 1500)
		for i := range 2 {
			sid := th.mustAs(t, k.bytes.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
			th.mustAs(t, k.bytes.Secret, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "k" + strconv.Itoa(i), "value": value})
			if i == 1 {
				r := th.as(t, k.bytes.Secret, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "more", "value": value})
				wantRefused(t, r, 429, -32106, "key_quota")
			}
		}
	})

	t.Run("concurrent calls cap", func(t *testing.T) {
		t.Parallel()
		sid := th.mustAs(t, k.busy.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
		// Three calls that each run for seconds, sent at once: with a cap of
		// two, one is refused at once and two run until their deadline.
		var wg sync.WaitGroup
		loops := make([]httpReply, 3)
		for i := range loops {
			wg.Go(func() {
				loops[i] = th.as(t, k.busy.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "busy-loop", "skill_params": map[string]any{}})
			})
		}
		wg.Wait()
		var refused, ran int
		for _, r := range loops {
			switch {
			case r.Status == 429 && strings.Contains(string(r.Body), "max_concurrent_calls"):
				refused++
				wantRefused(t, r, 429, -32106, "rate_limited")
			case r.RPC.Error != nil && r.RPC.Error.reason() == "timeout":
				ran++
			}
		}
		if refused != 1 || ran != 2 {
			t.Errorf("%d refused and %d ran, want 1 and 2:\n%s\n%s\n%s", refused, ran, loops[0].Body, loops[1].Body, loops[2].Body)
		}
		th.mustAs(t, k.busy.Secret, "_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "echo", "skill_params": map[string]any{}})
	})

	t.Run("concurrent tasks cap", func(t *testing.T) {
		t.Parallel()
		// A blocking SendMessage holds one slot (its task's), so two run
		// side by side under a cap of two and a third is refused.
		var wg sync.WaitGroup
		sends := make([]httpReply, 3)
		for i := range sends {
			wg.Go(func() { sends[i] = th.as(t, k.tasks.Secret, "SendMessage", sendMessage("busy-loop", map[string]any{})) })
		}
		wg.Wait()
		var refused, ran int
		for _, r := range sends {
			switch {
			case r.Status == 429:
				refused++
				wantRefused(t, r, 429, -32106, "rate_limited")
			case r.RPC.Error == nil && strings.Contains(string(r.RPC.Result), "TASK_STATE_FAILED"):
				ran++
			}
		}
		if refused != 1 || ran != 2 {
			t.Errorf("%d refused and %d ran, want 1 and 2:\n%s\n%s\n%s", refused, ran, sends[0].Body, sends[1].Body, sends[2].Body)
		}
	})

	t.Run("audit never logs a key", func(t *testing.T) {
		t.Parallel()
		for _, key := range []apiKey{k.admin, k.other, k.echoer, k.slow} {
			if strings.Contains(logs.String(), key.Secret) {
				t.Errorf("the log contains %v's secret", key)
			}
		}
	})
	// Serve logs the access mode as it starts (the parallel subtests above
	// run after this function returns).
	if !waitFor(10*time.Second, func() bool { return len(logs.lines(`"serving HTTP"`, "API keys required")) == 1 }) {
		t.Errorf("start-up log does not say keys are required:\n%s", logs.lines(`"serving HTTP"`))
	}
}

func planOf(skill string) map[string]any {
	return map[string]any{"name": "p", "steps": []any{map[string]any{"id": "s1", "type": "skill", "action": skill, "params": map[string]any{}}}}
}

func sendMessage(skill string, data any) map[string]any {
	return map[string]any{"message": map[string]any{
		"messageId": "m-" + skill, "role": "ROLE_USER",
		"parts":    []any{map[string]any{"data": data}},
		"metadata": map[string]any{"skillId": skill},
	}}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
