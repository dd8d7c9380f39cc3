package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// A plugin published once answers on all three hosts of a cluster, and its
// deletion removes it from all three.
func TestClusterPublishedPlugin(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster and three hosts")
	}
	c := natstest.Start(t, 3)
	var hosts []*testHost
	for range 3 {
		hosts = append(hosts, mustClusterHost(t, t.TempDir(), c.URL())) // each with an empty local folder
	}
	src := t.TempDir()
	mustPlugin(t, src, "tools", toolsManifest)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	name, err := host.PublishPlugin(ctx, filepath.Join(src, "tools"), host.PublishOptions{NATS: c.URL()})
	if err != nil || name != "tools" {
		t.Fatalf("PublishPlugin = %q, %v", name, err)
	}
	send := json.RawMessage(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"text":"hi"}}],"metadata":{"skillId":"echo"}}}`)
	for i, th := range hosts {
		eventually(t, fmt.Sprintf("published plugin answers on host %d", i), 60*time.Second, func() error {
			res, err := th.result("SendMessage", send)
			if err != nil {
				return err
			}
			if st := res["task"].(map[string]any)["status"].(map[string]any)["state"]; st != "TASK_STATE_COMPLETED" {
				return fmt.Errorf("task %v", st)
			}
			return nil
		})
	}
	if err := host.UnpublishPlugin(ctx, "tools", host.PublishOptions{NATS: c.URL()}); err != nil {
		t.Fatalf("UnpublishPlugin: %v", err)
	}
	for i, th := range hosts {
		eventually(t, fmt.Sprintf("unpublished plugin gone from host %d", i), 60*time.Second, func() error {
			cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
			defer ccancel()
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":` + string(send) + `}`)
			_, b, err := th.post(cctx, "/rpc", body)
			if err != nil {
				return err
			}
			if !bytes.Contains(b, []byte(`"code":-32602`)) || !bytes.Contains(b, []byte(`"reason":"unknown_skill"`)) {
				return fmt.Errorf("SendMessage after unpublish: %s; want -32602 unknown_skill", b)
			}
			return nil
		})
	}
	if err := host.UnpublishPlugin(ctx, "tools", host.PublishOptions{NATS: c.URL()}); !errors.Is(err, host.ErrNotPublished) {
		t.Errorf("second UnpublishPlugin = %v, want ErrNotPublished", err)
	}
}

// mustClusterHost starts a host with default settings on the NATS cluster at
// natsURL, served on 127.0.0.1:0 until the test ends.
func mustClusterHost(t *testing.T, pluginDir, natsURL string) *testHost {
	t.Helper()
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Data = t.TempDir()
	cfg.Plugins = pluginDir
	cfg.NATS = natsURL
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg, host.WithVersion("9.9.9-test"), host.WithLogger(quietLogger()))
	if err != nil {
		cancel()
		t.Fatalf("host.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return 30 s after its context ended")
		}
	})
	return &testHost{URL: "http://" + h.Addr().String(), Plugins: pluginDir, h: h}
}

// eventually calls f until it returns nil or the deadline passes (a NATS
// client moving to a surviving node, a stream electing a new leader), and
// fails the test with f's last error.
func eventually(t *testing.T, what string, within time.Duration, f func() error) {
	t.Helper()
	var err error
	if !testutil.Poll(within, func() bool { err = f(); return err == nil }) {
		t.Fatalf("%s: still failing after %v: %v", what, within, err)
	}
}

// result makes one call and returns its result, or an error for a transport
// failure or an error response (both retryable while a node fails over).
func (th *testHost) result(method string, params any) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := th.tryCall(ctx, method, params)
	if err != nil {
		return nil, err
	}
	if r.Error != nil {
		return nil, fmt.Errorf("%s: %d %s %v", method, r.Error.Code, r.Error.Message, r.Error.Data)
	}
	var out map[string]any
	if err := json.Unmarshal(r.Result, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// With default settings, every acknowledged session, context value, task and
// plan survives the loss of any one of the three NATS nodes.
func TestClusterKeepsAcknowledgedWrites(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c := natstest.Start(t, 3)
	plugins := t.TempDir()
	mustPlugin(t, plugins, "tools", toolsManifest)
	th := mustClusterHost(t, plugins, c.URL())

	const sid = "durable"
	th.mustResult(t, "_cleveragents/session/create", map[string]any{"session_id": sid, "agent_id": "ops"})
	th.mustResult(t, "_cleveragents/context/set", map[string]any{"session_id": sid, "context_key": "k", "value": map[string]any{"n": 42}})
	task := th.mustResult(t, "SendMessage", json.RawMessage(`{"message":{"messageId":"m1","role":"ROLE_USER",
		"parts":[{"data":{"text":"kept"}}],"metadata":{"skillId":"echo"}}}`))
	taskID, _ := task["task"].(map[string]any)["id"].(string)
	if taskID == "" {
		t.Fatalf("SendMessage result has no task id: %v", task)
	}
	th.mustResult(t, "_cleveragents/plan/create", map[string]any{"session_id": sid, "plan_id": "durable-plan",
		"plan_definition": map[string]any{"name": "one", "steps": []any{
			map[string]any{"id": "s1", "type": "skill", "action": "echo", "params": map[string]any{"text": "planned"}}}}})
	th.mustResult(t, "_cleveragents/plan/execute", map[string]any{"session_id": sid, "plan_id": "durable-plan"})
	eventually(t, "plan completes", 60*time.Second, func() error {
		st, err := th.result("_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": "durable-plan"})
		if err == nil && st["status"] != "completed" {
			err = fmt.Errorf("plan status %v", st["status"])
		}
		return err
	})

	for node := range 3 {
		c.WaitCurrent(60 * time.Second) // the previous victim has caught up
		c.Stop(node)
		eventually(t, fmt.Sprintf("records with node %d down", node), 60*time.Second, func() error {
			v, err := th.result("_cleveragents/context/get", map[string]any{"session_id": sid, "context_key": "k"})
			if err != nil {
				return err
			}
			if got := fmt.Sprint(v["value"]); got != "map[n:42]" {
				return fmt.Errorf("context value %s, want map[n:42]", got)
			}
			tk, err := th.result("GetTask", map[string]any{"id": taskID})
			if err != nil {
				return err
			}
			if st := tk["status"].(map[string]any)["state"]; st != "TASK_STATE_COMPLETED" {
				return fmt.Errorf("task state %v", st)
			}
			pl, err := th.result("_cleveragents/plan/status", map[string]any{"session_id": sid, "plan_id": "durable-plan"})
			if err != nil {
				return err
			}
			if pl["status"] != "completed" {
				return fmt.Errorf("plan status %v", pl["status"])
			}
			return nil
		})
		c.Restart(node)
	}
}

// /health answers 503 while the host has lost its NATS connection (a load
// balancer routes around it) and 200 again once it has reconnected.
func TestHealthFollowsNATS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	c := natstest.Start(t, 1)
	th := mustClusterHost(t, t.TempDir(), c.URL())
	health := func(want int) func() error {
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, th.URL+"/health", nil)
			resp, err := httpClient.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != want {
				return fmt.Errorf("/health = %d, want %d", resp.StatusCode, want)
			}
			return nil
		}
	}
	eventually(t, "healthy with NATS up", 30*time.Second, health(http.StatusOK))
	c.Stop(0)
	eventually(t, "unhealthy with NATS gone", 30*time.Second, health(http.StatusServiceUnavailable))
	c.Restart(0)
	eventually(t, "healthy again after the reconnect", 60*time.Second, health(http.StatusOK))
}
