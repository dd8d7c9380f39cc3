package host_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/natstest"
)

// lostWithin is the bound the README documents for a host's tasks to end
// once it is gone: a2a.lease_ttl + 2 × a2a.lease_sweep, plus one liveness
// question (2 s); the tests add slack for a loaded machine.
func lostWithin(ttl, sweep time.Duration) time.Duration { return ttl + 2*sweep + 2*time.Second }

const slack = 20 * time.Second

// wantLost checks a task ended failed with reason host_lost.
func wantLost(t *testing.T, lt leaseTask) {
	t.Helper()
	if lt.Status.State != "TASK_STATE_FAILED" || lt.reason() != fault.ReasonHostLost {
		t.Errorf("task %s: %s reason %q, want TASK_STATE_FAILED %s", lt.ID, lt.Status.State, lt.reason(), fault.ReasonHostLost)
	}
}

// wantLastEvent checks a subscriber's stream ended with the task failed
// host_lost.
func wantLastEvent(t *testing.T, events <-chan []string) {
	t.Helper()
	select {
	case evs := <-events:
		if len(evs) == 0 || !containsAll(evs[len(evs)-1], []string{"TASK_STATE_FAILED", fault.ReasonHostLost}) {
			t.Errorf("the subscriber's events: %q; want the last one failed %s", evs, fault.ReasonHostLost)
		}
	case <-time.After(30 * time.Second):
		t.Error("the subscriber's stream did not end")
	}
}

// A host of a cluster is killed (SIGKILL) while it runs a task and is
// started again on its data: at start it ends its previous boot's task
// failed host_lost — the lease TTL is an hour, so nothing else could — and a
// subscriber on the other host and the task's push receiver see the end.
func TestKill9TaskEndsHostLostAfterRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs skillhost processes on a 3-node NATS cluster")
	}
	c := natstest.Start(t, 3)
	plugins, cfg := leasePluginsDir(t), leaseConfig(t, time.Hour, 500*time.Millisecond, 5*time.Second)
	dataA := t.TempDir()
	a := startLeaseProc(t, dataA, plugins, cfg, c.URL())
	b := startLeaseProc(t, t.TempDir(), plugins, cfg, c.URL())
	push := newPushReceiver(t)
	id := a.send(t, "spin", map[string]any{}, push.URL)
	b.waitTask(t, id, "TASK_STATE_WORKING", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	events := b.subscribe(t, ctx, id)

	a.kill9(t)
	startLeaseProc(t, dataA, plugins, cfg, c.URL())
	restarted := time.Now()
	wantLost(t, b.waitTask(t, id, "TASK_STATE_FAILED", slack))
	t.Logf("the task ended %v after its host was back", time.Since(restarted).Round(time.Millisecond))
	wantLastEvent(t, events)
	push.waitFor(t, id, slack, "TASK_STATE_FAILED", fault.ReasonHostLost)
}

// A host of a cluster is killed (SIGKILL) for good while it runs two
// tasks: another host ends the one whose skill is not idempotent failed
// host_lost within the documented time (its subscriber and push receiver
// see it) and runs the idempotent one again to completion.
func TestKill9TasksTakenOverByAnotherHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs skillhost processes on a 3-node NATS cluster")
	}
	c := natstest.Start(t, 3)
	ttl, sweep := 2*time.Second, 500*time.Millisecond
	plugins, cfg := leasePluginsDir(t), leaseConfig(t, ttl, sweep, 5*time.Second)
	a := startLeaseProc(t, t.TempDir(), plugins, cfg, c.URL())
	b := startLeaseProc(t, t.TempDir(), plugins, cfg, c.URL())
	push := newPushReceiver(t)
	spin := a.send(t, "spin", map[string]any{}, push.URL)
	nap := a.send(t, "nap", napInput(3*time.Second), push.URL)
	b.waitTask(t, spin, "TASK_STATE_WORKING", 30*time.Second)
	b.waitTask(t, nap, "TASK_STATE_WORKING", 30*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	events := b.subscribe(t, ctx, spin)

	a.kill9(t)
	killed := time.Now()
	wantLost(t, b.waitTask(t, spin, "TASK_STATE_FAILED", lostWithin(ttl, sweep)+slack))
	t.Logf("the task ended %v after its host was killed (documented bound %v)", time.Since(killed).Round(time.Millisecond), lostWithin(ttl, sweep))
	wantLastEvent(t, events)
	push.waitFor(t, spin, slack, "TASK_STATE_FAILED", fault.ReasonHostLost)
	done := b.waitTask(t, nap, "TASK_STATE_COMPLETED", lostWithin(ttl, sweep)+3*time.Second+slack)
	if len(done.Artifacts) != 1 || !strings.Contains(string(done.Artifacts[0]), "zzz") {
		t.Errorf("the idempotent task completed with artifacts %s, want its input back", done.Artifacts)
	}
	push.waitFor(t, nap, slack, "TASK_STATE_COMPLETED")
}

// A host on its own embedded store is killed (SIGKILL) while it runs a
// task; started again on its data, it ends the task failed host_lost at
// start, and the push receiver hears of it.
func TestKill9EmbeddedTaskEndsHostLost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs skillhost processes")
	}
	plugins, cfg := leasePluginsDir(t), leaseConfig(t, time.Hour, 500*time.Millisecond, 5*time.Second)
	data := t.TempDir()
	a := startLeaseProc(t, data, plugins, cfg, "")
	push := newPushReceiver(t)
	id := a.send(t, "spin", map[string]any{}, push.URL)
	a.waitTask(t, id, "TASK_STATE_WORKING", 30*time.Second)
	a.kill9(t)
	again := startLeaseProc(t, data, plugins, cfg, "")
	wantLost(t, again.waitTask(t, id, "TASK_STATE_FAILED", slack))
	push.waitFor(t, id, slack, "TASK_STATE_FAILED", fault.ReasonHostLost)
}

// SIGTERM drains a host: new tasks are refused (-32106 draining, GET
// /health 503) while a running call finishes within the grace; at its end
// the host ends a task still running failed host_lost and hands an
// idempotent one to the other host, which runs it at once (the lease TTL
// is an hour).
func TestSigtermDrainsAndHandsBack(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs skillhost processes on a 3-node NATS cluster")
	}
	c := natstest.Start(t, 3)
	grace := 6 * time.Second
	plugins, cfg := leasePluginsDir(t), leaseConfig(t, time.Hour, time.Hour, grace)
	a := startLeaseProc(t, t.TempDir(), plugins, cfg, c.URL())
	b := startLeaseProc(t, t.TempDir(), plugins, cfg, c.URL())
	short := a.send(t, "nap_once", napInput(2*time.Second), "")
	spin := a.send(t, "spin", map[string]any{}, "")
	long := a.send(t, "nap", napInput(8*time.Second), "")
	t.Logf("tasks: short %s, spin %s, long %s", short, spin, long)
	for _, id := range []string{short, spin, long} {
		b.waitTask(t, id, "TASK_STATE_WORKING", 30*time.Second)
	}

	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually(t, "GET /health to answer 503 while draining", 10*time.Second, func() error {
		resp, err := http.Get(a.url + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			return fmt.Errorf("status %s", resp.Status)
		}
		return nil
	})
	_, rerr := a.rpc(t, "SendMessage", map[string]any{"message": map[string]any{"messageId": "late", "role": "ROLE_USER",
		"parts": []any{map[string]any{"data": map[string]any{}}}, "metadata": map[string]any{"skillId": "nap"}}})
	if rerr == nil || rerr.Code != -32106 || !strings.Contains(strings.ToLower(string(rerr.Data)), `"reason":"draining"`) {
		t.Errorf("SendMessage while draining: %+v, want -32106 draining", rerr)
	}
	if lt := a.task(t, spin); lt.Status.State != "TASK_STATE_WORKING" {
		t.Errorf("GetTask on the draining host: %q, want the running task", lt.Status.State)
	}
	b.waitTask(t, short, "TASK_STATE_COMPLETED", grace+slack)
	select {
	case err := <-a.done:
		if err != nil {
			t.Errorf("the drained host exited with %v, want 0", err)
		}
	case <-time.After(grace + slack):
		t.Fatal("the drained host did not exit")
	}
	wantLost(t, b.task(t, spin))
	b.waitTask(t, long, "TASK_STATE_COMPLETED", 8*time.Second+slack)
}
