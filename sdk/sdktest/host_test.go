package sdktest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/sdktest"
)

// mustCode asserts err is an *sdk.Error with code.
func mustCode(t *testing.T, err error, code string) {
	t.Helper()
	var e *sdk.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("error = %v, want code %s", err, code)
	}
}

func TestConfigLogsProgress(t *testing.T) {
	t.Parallel()
	h := sdktest.New()
	h.Config["greeting"] = "Hi"
	ctx := h.Context()
	if v, ok := ctx.Config("greeting"); v != "Hi" || !ok {
		t.Errorf("Config = %q, %v", v, ok)
	}
	if _, ok := ctx.Config("missing"); ok {
		t.Error("a missing config key was found")
	}
	ctx.Logf(sdk.LevelWarn, "n=%d", 3)
	ctx.Log(sdk.LevelDebug, "detail")
	if err := ctx.ProgressData(150, "done", map[string]int{"step": 2}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]sdktest.Log{{Level: sdk.LevelWarn, Message: "n=3"}, {Level: sdk.LevelDebug, Message: "detail"}}, h.Logs()); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
	want := []sdktest.Progress{{Percent: 100, Message: "done", Data: []byte(`{"step":2}`)}}
	if diff := cmp.Diff(want, h.Progress()); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestSessionContext(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h := sdktest.New()
	h.Now = func() time.Time { return now }
	if err := h.SetValue("seeded", []int{1, 2}, 0); err != nil {
		t.Fatal(err)
	}
	ctx := h.Context()
	var seeded []int
	if found, err := ctx.Get("seeded", &seeded); !found || err != nil || len(seeded) != 2 {
		t.Fatalf("Get seeded = %v, %v, %v", found, err, seeded)
	}
	if err := ctx.Set("k", map[string]string{"a": "b"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if found, err := h.Value("k", &got); !found || err != nil || got["a"] != "b" {
		t.Fatalf("Value = %v, %v, %v", found, err, got)
	}
	now = now.Add(time.Minute)
	if found, _ := ctx.Get("k", &got); found {
		t.Error("a value past its ttl was found")
	}
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"empty key", ctx.Set("", 1, 0), sdk.CodeBadRequest},
		{"long key", ctx.Set(strings.Repeat("k", sdktest.MaxKeyBytes+1), 1, 0), sdk.CodeBadRequest},
		{"huge value", ctx.Set("k", strings.Repeat("v", sdktest.MaxValueBytes), 0), sdk.CodeValueTooLarge},
		{"ttl over the cap", ctx.Set("k", 1, sdktest.MaxTTL+time.Millisecond), sdk.CodeBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { mustCode(t, tt.err, tt.code) })
	}
}

func TestNoSession(t *testing.T) {
	t.Parallel()
	h := sdktest.New()
	h.NoSession = true
	_, err := h.Context().Get("k", new(int))
	mustCode(t, err, sdk.CodeNoSession)
	mustCode(t, h.Context().Set("k", 1, 0), sdk.CodeNoSession)
}

func TestFetch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		allowed []string
		fetch   func(sdk.Request) (*sdk.Response, error)
		req     sdk.Request
		code    string // "" = success
		reached bool   // the request reached Fetch
	}{
		{"answered", []string{"api.example.com"}, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{URL: "https://api.example.com/x"}, "", true},
		{"wildcard", []string{"*.example.org"}, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{URL: "http://a.b.example.org/"}, "", true},
		{"apex not under wildcard", []string{"*.example.org"}, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{URL: "https://example.org/"}, sdk.CodeHostNotAllowed, false},
		{"port given", []string{"localhost:8080"}, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{URL: "http://localhost:8080/"}, "", true},
		{"port not allowed", []string{"localhost"}, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{URL: "http://localhost:8080/"}, sdk.CodeHostNotAllowed, false},
		{"not allowed", []string{"api.example.com"}, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{URL: "https://evil.example/"}, sdk.CodeHostNotAllowed, false},
		{"bad method", nil, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{Method: "PUT", URL: "https://a.example/"}, sdk.CodeBadRequest, false},
		{"bad scheme", nil, sdktest.Respond(200, "text/plain", "hi"), sdk.Request{URL: "ftp://a.example/"}, sdk.CodeBadRequest, false},
		{"no Fetch", nil, nil, sdk.Request{URL: "https://a.example/"}, sdk.CodeFetchFailed, true},
		{"host error code", nil, func(sdk.Request) (*sdk.Response, error) { return nil, sdk.Errorf(sdk.CodeTimeout, "slow") },
			sdk.Request{URL: "https://a.example/"}, sdk.CodeTimeout, true},
		{"plain error", nil, func(sdk.Request) (*sdk.Response, error) { return nil, errors.New("reset") },
			sdk.Request{URL: "https://a.example/"}, sdk.CodeFetchFailed, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := sdktest.New()
			h.AllowedHosts, h.Fetch = tt.allowed, tt.fetch
			resp, err := h.Context().Fetch(tt.req)
			if tt.code != "" {
				mustCode(t, err, tt.code)
			} else if err != nil || resp.Status != 200 || resp.Text() != "hi" || resp.Headers["Content-Type"] != "text/plain" {
				t.Fatalf("Fetch = %+v, %v", resp, err)
			}
			if got := len(h.Fetches()) == 1; got != tt.reached {
				t.Errorf("reached Fetch = %v, want %v", got, tt.reached)
			}
		})
	}
}

func TestAgentCalls(t *testing.T) {
	t.Parallel()
	h := sdktest.New()
	h.AllowedAgents = []string{"billing", "text-*"}
	h.Agents = sdktest.Answer(map[string]string{"ok": "yes"})
	ctx := h.Context()
	res, err := ctx.CallAgent(sdk.AgentCall{Agent: "text-tools", Method: "upper", Params: map[string]string{"text": "hi"}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.AgentID != "text-tools" || string(res.Result) != `{"ok":"yes"}` {
		t.Errorf("result = %+v", res)
	}
	_, err = ctx.CallAgent(sdk.AgentCall{Agent: "payroll", Method: "pay"})
	mustCode(t, err, sdk.CodeAgentNotAllowed)
	h.Agents = func(sdk.AgentCall) (*sdk.AgentResult, error) {
		return nil, sdk.Errorf(sdk.CodeCircuitOpen, "isolated").WithData(map[string]any{"reason": "circuit_open"})
	}
	_, err = ctx.CallAgent(sdk.AgentCall{Agent: "billing", Method: "charge"})
	mustCode(t, err, sdk.CodeCircuitOpen)
	want := []sdk.AgentCall{
		{Agent: "text-tools", Method: "upper", Params: json.RawMessage(`{"text":"hi"}`), Timeout: time.Second},
		{Agent: "billing", Method: "charge"},
	}
	if diff := cmp.Diff(want, h.AgentCalls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

func TestHostTask(t *testing.T) {
	t.Parallel()
	h := sdktest.New()
	if _, err := h.Context().Task(); err == nil || !strings.Contains(err.Error(), sdk.CodeNotATask) {
		t.Errorf("Task without h.Task = %v, want %s", err, sdk.CodeNotATask)
	}
	h.Task = &sdk.Task{ID: "t1", Turn: 2, Messages: []sdk.Message{{Role: "agent", Text: "name?"}, {Role: "user", Text: "Ada"}}}
	got, err := h.Context().Task()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(h.Task, got); diff != "" {
		t.Errorf("Task (-want +got):\n%s", diff)
	}
}
