package host_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/a2a"
)

// tokenSecret is in the input of the key's task: no answer to a session
// token may ever carry it.
const tokenSecret = "the key's task input, not for the token"

// tokenScene is a host with one key, two of its sessions (the token's and
// another), an A2A task and a plan of the key outside the token's session.
type tokenScene struct {
	th                *testHost
	key, token        string
	mine, other       string // session ids: the token's, and another of the key
	taskID, otherPlan string
	tokenBodies       []string // every body answered to the token
}

func mustTokenScene(t *testing.T) *tokenScene {
	t.Helper()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	k := newKey(t, "owner", "*")
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Auth.Keys = []config.AuthKey{k.Entry} })
	s := &tokenScene{th: th, key: k.Secret}
	created := th.mustAs(t, s.key, "_cleveragents/session/create", map[string]any{})
	s.mine, s.token = created["session_id"].(string), created["session_token"].(string)
	s.other = th.mustAs(t, s.key, "_cleveragents/session/create", map[string]any{})["session_id"].(string)
	th.mustAs(t, s.key, "_cleveragents/context/set", map[string]any{"session_id": s.other, "context_key": "k", "value": tokenSecret})
	s.otherPlan = th.mustAs(t, s.key, "_cleveragents/plan/create", map[string]any{"session_id": s.other, "plan_definition": planOf("echo")})["plan_id"].(string)
	task := th.mustAs(t, s.key, "SendMessage", sendMessage("echo", map[string]any{"secret": tokenSecret}))["task"].(map[string]any)
	s.taskID = task["id"].(string)
	return s
}

// rpc calls method with the token over /rpc (or path) and records the body.
func (s *tokenScene) rpc(t *testing.T, path, method string, params any) httpReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := send(ctx, httpClient, s.th.URL+path, map[string]string{"Authorization": "Bearer " + s.token}, rpcBody(method, params))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	s.tokenBodies = append(s.tokenBodies, string(r.Body))
	return r
}

// http sends a request of the HTTP+JSON binding (or any route) with the
// token and records the body.
func (s *tokenScene) http(t *testing.T, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, s.th.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	s.tokenBodies = append(s.tokenBodies, string(b))
	return resp.StatusCode, string(b)
}

// tokenDecision is what a session token may do with one method: "refused"
// (403 scope_denied whatever its params name, its own session included), or
// allowed within its session: own are params naming the token's session,
// check what their answer must show (nil: success).
type tokenDecision struct {
	own   func(s *tokenScene) map[string]any
	check func(t *testing.T, s *tokenScene, r httpReply)
}

var refusedToTokens = tokenDecision{}

// tokenDecisions is the decision for every method the engine serves. A
// method without an entry fails TestSessionTokenEveryMethod: whoever adds a
// method decides what a token may do with it.
func tokenDecisions() map[string]tokenDecision {
	ok := func(t *testing.T, _ *tokenScene, r httpReply) {
		t.Helper()
		if r.Status != 200 || r.RPC.Error != nil {
			t.Errorf("HTTP %d %s, want success", r.Status, r.Body)
		}
	}
	planNotFound := func(t *testing.T, _ *tokenScene, r httpReply) {
		t.Helper()
		wantRefused(t, r, 200, -32101, "plan_not_found")
	}
	otherPlan := func(s *tokenScene) map[string]any {
		return map[string]any{"session_id": s.mine, "plan_id": s.otherPlan}
	}
	d := map[string]tokenDecision{
		"_cleveragents/context/set": {func(s *tokenScene) map[string]any {
			return map[string]any{"session_id": s.mine, "context_key": "k", "value": "the token's"}
		}, ok},
		"_cleveragents/context/get": {func(s *tokenScene) map[string]any {
			return map[string]any{"session_id": s.mine, "context_key": "k"}
		}, func(t *testing.T, _ *tokenScene, r httpReply) {
			t.Helper()
			if !strings.Contains(string(r.RPC.Result), "the token's") {
				t.Errorf("context/get of its own session: %s, want its own value", r.Body)
			}
		}},
		"_cleveragents/skill/execute": {func(s *tokenScene) map[string]any {
			return map[string]any{"session_id": s.mine, "skill_id": "echo", "skill_params": map[string]any{"n": 1}}
		}, ok},
		"_cleveragents/agent/call": {func(s *tokenScene) map[string]any {
			return map[string]any{"session_id": s.mine, "target_agent_id": "tools", "method": "echo", "params": map[string]any{}}
		}, ok},
		"_cleveragents/agent/notify": {func(s *tokenScene) map[string]any {
			return map[string]any{"session_id": s.mine, "event": "tick"}
		}, ok},
		"_cleveragents/plan/create": {func(s *tokenScene) map[string]any {
			return map[string]any{"session_id": s.mine, "plan_id": "token-plan", "plan_definition": planOf("echo")}
		}, ok},
		"_cleveragents/plan/execute": {otherPlan, planNotFound},
		"_cleveragents/plan/status":  {otherPlan, planNotFound},
		"_cleveragents/plan/cancel":  {otherPlan, planNotFound},
		"_cleveragents/plan/verify":  {otherPlan, planNotFound},
		"_cleveragents/plan/list": {func(s *tokenScene) map[string]any { return map[string]any{"session_id": s.mine} },
			func(t *testing.T, s *tokenScene, r httpReply) {
				t.Helper()
				if r.RPC.Error != nil || strings.Contains(string(r.RPC.Result), s.otherPlan) || !strings.Contains(string(r.RPC.Result), "token-plan") {
					t.Errorf("plan/list of its own session: %s, want its own plan only", r.Body)
				}
			}},
		// session/close is allowed too (it revokes the token): checked last.
		"_cleveragents/session/close": {},
	}
	for _, m := range []string{"_cleveragents/session/create", "_cleveragents/task/verify",
		"SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask", "GetExtendedAgentCard",
		"CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig",
		"message/send", "message/stream", "tasks/get", "tasks/list", "tasks/cancel", "tasks/resubscribe",
		"agent/getAuthenticatedExtendedCard", "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete"} {
		d[m] = refusedToTokens
	}
	return d
}

// attackParams are the params of the attack: the token's own
// session_id added to a call about the key's task (and whatever else the
// method reads).
func (s *tokenScene) attackParams() map[string]any {
	p := sendMessage("echo", map[string]any{"x": 1})
	p["session_id"] = s.mine
	p["id"], p["taskId"], p["task_id"] = s.taskID, s.taskID, s.taskID
	p["pushNotificationConfig"] = map[string]any{"url": "http://127.0.0.1:1/hook"}
	return p
}

// TestSessionTokenEveryMethod: a session token can do only what the security guide
// says — the methods of its own session, within that session — over every
// method the engine serves, on /rpc and on an agent's endpoint; every other
// method is refused 403 scope_denied even when its params name the token's
// own session (issue 20: with "session_id" added, a token read, canceled
// and created tasks of its whole key).
func TestSessionTokenEveryMethod(t *testing.T) {
	s := mustTokenScene(t)
	decisions := tokenDecisions()
	methods := host.EngineMethods(s.th.h)
	if len(methods) < 30 {
		t.Fatalf("the engine serves %d methods: %v", len(methods), methods)
	}
	for _, m := range methods {
		if _, ok := decisions[m]; !ok {
			t.Errorf("method %s has no session-token decision in tokenDecisions: decide what a token may do with it (docs/guides/security.md, Session tokens)", m)
		}
	}
	for m := range decisions {
		if !slices.Contains(methods, m) {
			t.Errorf("tokenDecisions names %s, which the engine does not serve", m)
		}
	}
	// Order: context/set before get, plan/create before list; session/close last.
	slices.SortFunc(methods, func(a, b string) int {
		rank := func(m string) int {
			switch m {
			case "_cleveragents/context/set", "_cleveragents/plan/create":
				return 0
			case "_cleveragents/session/close":
				return 2
			}
			return 1
		}
		return rank(a) - rank(b)
	})
	for _, m := range methods {
		d := decisions[m]
		switch {
		case m == "_cleveragents/session/close":
		case d.own == nil: // refused
			wantRefused(t, s.rpc(t, "/rpc", m, s.attackParams()), 403, -32105, "scope_denied")
			if a2a.IsMethod(m) { // an agent's endpoint serves only these
				wantRefused(t, s.rpc(t, "/agents/tools/rpc", m, s.attackParams()), 403, -32105, "scope_denied")
			}
		default:
			d.check(t, s, s.rpc(t, "/rpc", m, d.own(s)))
			other := d.own(s)
			other["session_id"] = s.other
			wantRefused(t, s.rpc(t, "/rpc", m, other), 403, -32105, "scope_denied")
		}
	}
	wantRefused(t, s.rpc(t, "/rpc", "_cleveragents/session/close", map[string]any{"session_id": s.other}), 403, -32105, "scope_denied")
	if r := s.rpc(t, "/rpc", "_cleveragents/session/close", map[string]any{"session_id": s.mine}); r.Status != 200 || r.RPC.Error != nil {
		t.Errorf("session/close of its own session: HTTP %d %s", r.Status, r.Body)
	}
	wantRefused(t, s.rpc(t, "/rpc", "_cleveragents/context/get", map[string]any{"session_id": s.mine, "context_key": "k"}), 401, -32105, "token_revoked")

	// The key's own view is untouched: its other session, plan and task.
	if got := s.th.mustAs(t, s.key, "_cleveragents/context/get", map[string]any{"session_id": s.other, "context_key": "k"}); got["value"] != tokenSecret {
		t.Errorf("the other session's context after the token's calls: %v", got)
	}
	s.wantKeyTasksUntouched(t)
}

// TestSessionTokenHTTPBindings: the A2A HTTP+JSON binding (each route, also
// under a tenant, with the token's session_id in the body) and MCP refuse a
// session token with 403 scope_denied.
func TestSessionTokenHTTPBindings(t *testing.T) {
	s := mustTokenScene(t)
	send := `{"session_id":"` + s.mine + `","message":{"messageId":"m1","role":"ROLE_USER","parts":[{"data":{"x":1}}],"metadata":{"skillId":"echo"}}}`
	push := `{"session_id":"` + s.mine + `","url":"http://127.0.0.1:1/hook"}`
	routes := []struct{ method, path, body string }{
		{http.MethodPost, "/message:send", send},
		{http.MethodPost, "/message:stream", send},
		{http.MethodGet, "/tasks/" + s.taskID + "?session_id=" + s.mine, ""},
		{http.MethodGet, "/tasks?session_id=" + s.mine, ""},
		{http.MethodPost, "/tasks/" + s.taskID + ":cancel", `{"session_id":"` + s.mine + `"}`},
		{http.MethodPost, "/tasks/" + s.taskID + ":subscribe", `{"session_id":"` + s.mine + `"}`},
		{http.MethodPost, "/tasks/" + s.taskID + "/pushNotificationConfigs", push},
		{http.MethodGet, "/tasks/" + s.taskID + "/pushNotificationConfigs", ""},
		{http.MethodGet, "/tasks/" + s.taskID + "/pushNotificationConfigs/c1", ""},
		{http.MethodDelete, "/tasks/" + s.taskID + "/pushNotificationConfigs/c1", ""},
		{http.MethodGet, "/extendedAgentCard", ""},
	}
	for _, prefix := range []string{"/a2a", "/a2a/tools"} {
		for _, r := range routes {
			status, body := s.http(t, r.method, prefix+r.path, r.body)
			if status != http.StatusForbidden || !strings.Contains(body, `"scope_denied"`) {
				t.Errorf("%s %s%s with a session token: HTTP %d %s, want 403 scope_denied", r.method, prefix, r.path, status, body)
			}
		}
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if status, body := s.http(t, http.MethodPost, "/mcp", initialize); status != http.StatusForbidden || !strings.Contains(body, "scope_denied") {
		t.Errorf("POST /mcp with a session token: HTTP %d %s, want 403 scope_denied", status, body)
	}
	for _, path := range []string{"/metrics", "/admin/status"} {
		if status, body := s.http(t, http.MethodGet, path, ""); status != http.StatusForbidden {
			t.Errorf("GET %s with a session token: HTTP %d %s, want 403", path, status, body)
		}
	}
	if status, body := s.http(t, http.MethodGet, "/events", ""); status != http.StatusForbidden || !strings.Contains(body, "scope_denied") {
		t.Errorf("GET /events without its session with a session token: HTTP %d %s, want 403 scope_denied", status, body)
	}
	s.wantKeyTasksUntouched(t)
}

// wantKeyTasksUntouched checks that the key still has exactly its one
// task, completed (the token created and canceled none), and that no answer
// to the token carried that task's input or id, or the other session's
// value.
func (s *tokenScene) wantKeyTasksUntouched(t *testing.T) {
	t.Helper()
	task := s.th.mustAs(t, s.key, "GetTask", map[string]any{"id": s.taskID})
	if st, _ := task["status"].(map[string]any); st["state"] != "TASK_STATE_COMPLETED" {
		t.Errorf("the key's task after the token's calls: %v", task["status"])
	}
	if list := s.th.mustAs(t, s.key, "ListTasks", map[string]any{}); list["totalSize"] != 1.0 {
		t.Errorf("the key lists %s: the token created tasks", mustJSON(t, list))
	}
	for _, b := range s.tokenBodies {
		if strings.Contains(b, tokenSecret) || strings.Contains(b, `"id":"`+s.taskID+`"`) {
			t.Errorf("an answer to the session token carries the key's data: %s", b)
		}
	}
}
