package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stepperGuest is host/internal/plan/testdata/stepper built with the SDK:
// steps that count their runs in session context, sleep or time out on
// purpose, and an events export that records notifications.
var stepperGuest struct {
	once sync.Once
	wasm []byte
	err  error
}

// stepperPlugins returns a plugin folder with the stepper plugin.
func stepperPlugins(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "host", "internal", "plan", "testdata", "stepper")
	stepperGuest.once.Do(func() {
		out := filepath.Join(t.TempDir(), "stepper.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = src
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=readonly")
		if b, err := cmd.CombinedOutput(); err != nil {
			stepperGuest.err = fmt.Errorf("building the stepper plugin: %w\n%s", err, b)
			return
		}
		stepperGuest.wasm, stepperGuest.err = os.ReadFile(out)
	})
	if stepperGuest.err != nil {
		t.Fatal(stepperGuest.err)
	}
	manifest, err := os.ReadFile(filepath.Join(src, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "stepper")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"stepper.wasm": stepperGuest.wasm, "plugin.yaml": manifest} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func mustSessionID(t *testing.T, url string) string {
	t.Helper()
	var s struct {
		SessionID string `json:"session_id"`
	}
	mustResult(t, call(t, url, "_cleveragents/session/create", map[string]any{}), &s)
	return s.SessionID
}

// contextInt reads an integer context value.
func contextInt(t *testing.T, url, sess, key string) int {
	t.Helper()
	var v struct {
		Value int `json:"value"`
	}
	mustResult(t, call(t, url, "_cleveragents/context/get", map[string]any{"session_id": sess, "context_key": key}), &v)
	return v.Value
}

// diamondPlan is A → B, C → D; D uses B's and C's outputs.
func diamondPlan(sleepMS int) map[string]any {
	work := func(id string, in map[string]any, deps ...string) map[string]any {
		s := map[string]any{"id": id, "type": "agent", "agent": "stepper", "action": "work", "params": in}
		if deps != nil {
			s["depends_on"] = deps
		}
		return s
	}
	return map[string]any{"name": "diamond", "steps": []map[string]any{
		work("A", map[string]any{"key": "A", "value": 20}),
		work("B", map[string]any{"key": "B", "sleep_ms": sleepMS, "value": "${steps.A.output.value}"}, "A"),
		work("C", map[string]any{"key": "C", "sleep_ms": sleepMS, "value": "c saw ${steps.A.output.value}"}, "A"),
		work("D", map[string]any{"key": "D", "value": map[string]any{"b": "${steps.B.output.value}", "c": "${steps.C.output.value}"}}, "B", "C"),
	}}
}

// TestKill9DuringParallelSteps: the host is killed with SIGKILL while the
// diamond's B and C run in parallel; after a restart on the same data the
// plan completes, D uses both outputs, and A (counted in session context by
// the plugin) ran exactly once.
func TestKill9DuringParallelSteps(t *testing.T) {
	t.Parallel()
	data, plugins := t.TempDir(), stepperPlugins(t)
	h := startHost(t, data, plugins)
	sess := mustSessionID(t, h.url)
	var created map[string]any
	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "diamond", "plan_definition": diamondPlan(4000)}), &created)
	var started map[string]any
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "diamond",
		"execution_options": map[string]any{"parallel": true}}), &started)
	waitPlan(t, h.url, sess, "diamond", "B and C to run", func(st planStatus) bool {
		return len(st.Progress.RunningSteps) == 2 && st.Attempts["B"] == 1 && st.Attempts["C"] == 1
	})
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.done

	h2 := startHost(t, data, plugins)
	st := waitPlan(t, h2.url, sess, "diamond", "completion", func(st planStatus) bool { return st.Status != "executing" })
	if st.Status != "completed" {
		t.Fatalf("plan %s after restart, error %v", st.Status, st.Error)
	}
	if diff := cmp.Diff(map[string]int{"A": 1, "B": 2, "C": 2, "D": 1}, st.Attempts); diff != "" {
		t.Errorf("attempts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"key": "D", "run": float64(1), "value": map[string]any{"b": float64(20), "c": "c saw 20"}}, st.Result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	// A and D ran once. B and C were started twice; the kill may have come
	// before the plugin counted the first start.
	for key, want := range map[string][2]int{"A": {1, 1}, "B": {1, 2}, "C": {1, 2}, "D": {1, 1}} {
		if n := contextInt(t, h2.url, sess, "runs:"+key); n < want[0] || n > want[1] {
			t.Errorf("step %s ran %d times, want %d..%d", key, n, want[0], want[1])
		}
	}
}

// TestNotifyReachesPluginEventExport: agent/notify to the stepper runs its
// events export, which records the notification in session context; the
// same request_id again is dropped.
func TestNotifyReachesPluginEventExport(t *testing.T) {
	t.Parallel()
	h := startHost(t, t.TempDir(), stepperPlugins(t))
	sess := mustSessionID(t, h.url)
	notify := func(requestID string) {
		t.Helper()
		body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"_cleveragents/agent/notify","params":{"session_id":%q,"request_id":%q,"target_agent_id":"stepper","event":"deployed","data":{"version":"1.2"}}}`, sess, requestID)
		resp, err := http.Post(h.url+"/events", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("POST /events: HTTP %d", resp.StatusCode)
		}
	}
	notify("n-1")
	notify("n-1") // the same notification again: dropped
	var res map[string]any
	mustResult(t, call(t, h.url, "_cleveragents/agent/notify", map[string]any{"session_id": sess, "request_id": "n-2", "target_agent_id": "stepper", "event": "deployed"}), &res)
	if res["delivered"] != true || res["status"] != "accepted" || res["notification_id"] != "n-2" {
		t.Errorf("agent/notify result %v", res)
	}
	mustResult(t, call(t, h.url, "_cleveragents/agent/notify", map[string]any{"session_id": sess, "request_id": "n-2", "target_agent_id": "stepper", "event": "deployed"}), &res)
	if res["delivered"] != false || res["status"] != "duplicate" {
		t.Errorf("repeated agent/notify result %v", res)
	}
	if n := contextInt(t, h.url, sess, "events_received"); n != 2 {
		t.Errorf("the plugin received %d events, want 2", n)
	}
	var got struct {
		Value map[string]any `json:"value"`
	}
	mustResult(t, call(t, h.url, "_cleveragents/context/get", map[string]any{"session_id": sess, "context_key": "event:n-1"}), &got)
	want := map[string]any{"id": "n-1", "event": "deployed", "session_id": sess, "target_agent_id": "stepper", "data": map[string]any{"version": "1.2"}}
	delete(got.Value, "timestamp")
	if diff := cmp.Diff(want, got.Value); diff != "" {
		t.Errorf("recorded event (-want +got):\n%s", diff)
	}
}

// sseEvent is one frame of GET /events.
type sseEvent struct {
	ID, Type string
	Data     struct {
		PlanID string `json:"plan_id"`
		Data   struct {
			StepID  string `json:"step_id"`
			Attempt int    `json:"attempt"`
		} `json:"data"`
	}
}

// subscribe opens GET /events and returns the frames as they arrive.
func subscribe(t *testing.T, ctx context.Context, url, sess, lastID string) <-chan sseEvent {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/events?session_id="+sess, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET /events: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 64)
	sc := bufio.NewScanner(resp.Body)
	sc.Scan()
	if sc.Text() != ": subscribed" {
		t.Fatalf("first line %q", sc.Text())
	}
	go func() {
		defer close(out)
		defer resp.Body.Close()
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.ID = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.Type = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data)
			case line == "" && ev.ID != "":
				out <- ev
				ev = sseEvent{}
			}
		}
	}()
	return out
}

func next(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(60 * time.Second):
		t.Fatal("no event within 60s")
	}
	return sseEvent{}
}

// TestEventsStreamPlanProgress: a GET /events subscriber sees a plan's
// progress in order, and one that reconnects with Last-Event-ID gets the
// rest.
func TestEventsStreamPlanProgress(t *testing.T) {
	t.Parallel()
	h := startHost(t, t.TempDir(), stepperPlugins(t))
	sess := mustSessionID(t, h.url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events := subscribe(t, ctx, h.url, sess, "")
	def := map[string]any{"name": "two", "steps": []map[string]any{
		{"id": "first", "type": "skill", "action": "work", "params": map[string]any{"key": "first"}},
		{"id": "second", "type": "skill", "action": "work", "params": map[string]any{"key": "second", "value": "${steps.first.output.run}"}},
	}}
	var created, started map[string]any
	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "two", "plan_definition": def}), &created)
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "two"}), &started)
	var got []string
	var ids []string
	for len(got) == 0 || got[len(got)-1] != "plan.completed" {
		ev := next(t, events)
		name := ev.Type
		if ev.Data.Data.StepID != "" {
			name += " " + ev.Data.Data.StepID
		}
		if ev.Data.PlanID != "two" {
			t.Errorf("event %+v of another plan", ev)
		}
		got, ids = append(got, name), append(ids, ev.ID)
	}
	want := []string{"plan.started", "plan.step.started first", "plan.step.completed first",
		"plan.step.started second", "plan.step.completed second", "plan.completed"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	cancel()
	rctx, rcancel := context.WithCancel(context.Background())
	defer rcancel()
	resumed := subscribe(t, rctx, h.url, sess, ids[2])
	for i := 3; i < len(ids); i++ {
		if ev := next(t, resumed); ev.ID != ids[i] {
			t.Fatalf("resumed event %d: id %s, want %s", i, ev.ID, ids[i])
		}
	}
}

// TestWebhookSignedFinalStatus: a receiver on 127.0.0.1, allowed by
// net.allow_private, gets the final status signed with
// plans.webhook_secret (from the environment).
func TestWebhookSignedFinalStatus(t *testing.T) {
	t.Parallel()
	const secret = "e2e-webhook-secret-0123456789abcdef"
	got := make(chan *http.Request, 4)
	bodies := make(chan []byte, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	cfg := filepath.Join(t.TempDir(), "skillhost.yaml")
	if err := os.WriteFile(cfg, []byte("net:\n  allow_private: [127.0.0.1]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binPath, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--plugins", stepperPlugins(t), "--config", cfg)
	cmd.Env = append(os.Environ(), "SKILLHOST_PLANS__WEBHOOK_SECRET="+secret)
	h := startServe(t, cmd)
	sess := mustSessionID(t, h.url)
	def := map[string]any{"name": "hooked", "steps": []map[string]any{{"id": "only", "type": "skill", "action": "work", "params": map[string]any{"value": "done"}}}}
	var created, started map[string]any
	mustResult(t, call(t, h.url, "_cleveragents/plan/create", map[string]any{"session_id": sess, "plan_id": "hooked", "plan_definition": def}), &created)
	mustResult(t, call(t, h.url, "_cleveragents/plan/execute", map[string]any{"session_id": sess, "plan_id": "hooked",
		"execution_options": map[string]any{"webhook": srv.URL + "/done"}}), &started)
	var req *http.Request
	var body []byte
	select {
	case req = <-got:
		body = <-bodies
	case <-time.After(60 * time.Second):
		t.Fatal("no webhook within 60s")
	}
	// As the plans guide tells receivers: HMAC-SHA256 of "<timestamp>.<body>".
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(req.Header.Get("X-Skillhost-Timestamp") + "."))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(sig), []byte(req.Header.Get("X-Skillhost-Signature"))) {
		t.Fatalf("signature %q, want %q", req.Header.Get("X-Skillhost-Signature"), sig)
	}
	var st struct {
		PlanID string         `json:"plan_id"`
		Status string         `json:"status"`
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if st.PlanID != "hooked" || st.Status != "completed" || st.Result["value"] != "done" || req.Header.Get("X-Skillhost-Event") != "plan.completed" {
		t.Errorf("webhook %s %+v", req.Header.Get("X-Skillhost-Event"), st)
	}
	final := waitPlan(t, h.url, sess, "hooked", "the webhook's outcome", func(st planStatus) bool { return st.Webhook["status"] == "delivered" })
	if final.Webhook["attempts"] != float64(1) {
		t.Errorf("webhook status %v", final.Webhook)
	}
}
