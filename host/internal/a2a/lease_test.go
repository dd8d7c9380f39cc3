package a2a_test

import (
	"context"
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/faultnet"
	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// A host's NATS connection is cut while it runs two tasks (a blocking
// SendMessage's and a stored one); both are canceled from another host
// meanwhile, so the cancels never reach it. Once the connection is back the
// host reads its tasks again and stops both sandbox calls — long before the
// calls' 2-minute limit.
func TestLeaseCancelWhileCutStopsTheCall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c, proxies := leaseCluster(t)
	plugins, cache := leasePlugins(t), t.TempDir()
	a := startLeaseHost(t, plugins, cache, leaseOpts{nats: proxies.URL()})
	b := startLeaseHost(t, plugins, cache, leaseOpts{nats: c.URL()})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clA, clB := mustClient(t, ctx, a.URL), mustClient(t, ctx, b.URL)

	stored := startTask(t, ctx, a, skillMsg("spin", a2av1.NewDataPart(map[string]any{})))
	blockingReq := skillMsg("spin", a2av1.NewDataPart(map[string]any{}))
	blockingReq.Message.ContextID = "cut-cancel"
	type sent struct {
		task *a2av1.Task
		err  error
	}
	done := make(chan sent, 1)
	go func() {
		res, err := clA.SendMessage(ctx, blockingReq)
		task, _ := res.(*a2av1.Task)
		done <- sent{task, err}
	}()
	var blocking a2av1.TaskID
	testutil.Eventually(t, 30*time.Second, "the blocking task working, seen from B", func() bool {
		list, err := clB.ListTasks(ctx, &a2av1.ListTasksRequest{ContextID: "cut-cancel"})
		if err == nil && len(list.Tasks) == 1 && list.Tasks[0].Status.State == a2av1.TaskStateWorking {
			blocking = list.Tasks[0].ID
		}
		return blocking != ""
	})
	waitWorking(t, ctx, b, stored.ID)
	if n := a.svc.Running(); n != 2 {
		t.Fatalf("A runs %d tasks, want 2", n)
	}

	proxies.Set(faultnet.Faults{Cut: true})
	waitDisconnected(t, a)
	for _, id := range []a2av1.TaskID{stored.ID, blocking} {
		if _, err := clB.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: id}); err != nil {
			t.Fatalf("CancelTask(%s) on B: %v", id, err)
		}
	}
	proxies.Set(faultnet.Faults{})
	// Bounded well inside the calls' 2-minute limit: only the recheck after
	// the reconnect can stop them this soon.
	testutil.Eventually(t, 60*time.Second, "A's sandbox calls to stop after the reconnect", func() bool { return a.svc.Running() == 0 })
	res := <-done
	if res.err != nil || res.task == nil || res.task.Status.State != a2av1.TaskStateCanceled {
		t.Errorf("A's blocking SendMessage = %v, %v; want the canceled task", res.task, res.err)
	}
	got, err := clA.GetTask(ctx, &a2av1.GetTaskRequest{ID: stored.ID})
	if err != nil || got.Status.State != a2av1.TaskStateCanceled {
		t.Errorf("the stored task on A = %v, %v; want canceled", got, err)
	}
}

// A subscriber on a host whose NATS connection is cut while the task it
// follows runs elsewhere sees the rest of the task once the connection is
// back: nothing missed, the end included.
func TestLeaseSubscriberCatchesUpAfterCut(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c, proxies := leaseCluster(t)
	plugins, cache := leasePlugins(t), t.TempDir()
	a := startLeaseHost(t, plugins, cache, leaseOpts{nats: proxies.URL()})
	b := startLeaseHost(t, plugins, cache, leaseOpts{nats: c.URL()})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	task := startTask(t, ctx, b, skillMsg("slow", a2av1.NewDataPart(map[string]any{"steps": 30, "ms": 100})))
	var id a2av1.TaskID = task.ID
	ctxID := task.ContextID
	// The task is returned submitted; the snapshot A's subscription opens
	// with is the state A reads, so wait until A reads it working.
	waitState(t, ctx, a, id, a2av1.TaskStateWorking)
	progress, cut := 0, false
	var got []streamEvent
	for ev, err := range mustClient(t, ctx, a.URL).SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: id}) {
		if err != nil {
			t.Fatalf("subscription on A after %d events: %v", len(got), err)
		}
		e := describeEvent(t, ev, &id, &ctxID)
		if e.Kind == "status" && e.State == string(a2av1.TaskStateWorking) { // progress (or the snapshot's own move, repeated)
			if progress++; progress == 3 && !cut { // under way: cut A off for a while
				cut = true
				proxies.Set(faultnet.Faults{Cut: true})
				waitDisconnected(t, a)
				waitState(t, ctx, b, id, a2av1.TaskStateCompleted)
				proxies.Set(faultnet.Faults{})
			}
			continue
		}
		got = append(got, e)
	}
	want := []streamEvent{
		{Kind: "task", State: string(a2av1.TaskStateWorking)},
		{Kind: "artifact", Parts: []string{`data:{"done":true}`}, Last: true},
		{Kind: "status", State: string(a2av1.TaskStateCompleted)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events on A across the cut, working updates aside (-want +got):\n%s", diff)
	}
	if !cut {
		t.Error("the task ended before the cut")
	}
}

// waitState waits until h sees the task in state.
func waitState(t *testing.T, ctx context.Context, h *testHost, id a2av1.TaskID, state a2av1.TaskState) *a2av1.Task {
	t.Helper()
	cl := mustClient(t, ctx, h.URL)
	var task *a2av1.Task
	testutil.Eventually(t, 60*time.Second, "task "+string(id)+" "+string(state), func() bool {
		var err error
		task, err = cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: id})
		return err == nil && task.Status.State == state
	})
	return task
}

// A host whose connection turns half-open (nothing forwarded, nothing
// closed) loses its tasks after the lease: another host ends the
// non-idempotent one failed host_lost — its subscriber there sees the end —
// and runs the idempotent one again to completion. When the host finally
// reconnects it stops both of its own calls.
func TestLeaseHalfOpenHostLosesItsTasks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c, proxies := leaseCluster(t)
	plugins, cache := leasePlugins(t), t.TempDir()
	opts := leaseOpts{ttl: time.Second, sweep: 200 * time.Millisecond}
	opts.nats = proxies.URL()
	a := startLeaseHost(t, plugins, cache, opts)
	opts.nats = c.URL()
	b := startLeaseHost(t, plugins, cache, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	spin := startTask(t, ctx, a, skillMsg("spin", a2av1.NewDataPart(map[string]any{})))
	again := startTask(t, ctx, a, skillMsg("slow_again", a2av1.NewDataPart(map[string]any{"steps": 40, "ms": 100})))
	waitWorking(t, ctx, b, spin.ID)
	waitWorking(t, ctx, b, again.ID)
	var events []a2av1.Event
	subscribed := make(chan error, 1)
	go func() {
		for ev, err := range mustClient(t, ctx, b.URL).SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: spin.ID}) {
			if err != nil {
				subscribed <- err
				return
			}
			events = append(events, ev)
		}
		subscribed <- nil
	}()

	proxies.Set(faultnet.Faults{HalfOpen: true})
	lost := waitState(t, ctx, b, spin.ID, a2av1.TaskStateFailed)
	if r := statusReason(lost.Status); r != fault.ReasonHostLost {
		t.Errorf("the spin task failed with reason %q, want %s", r, fault.ReasonHostLost)
	}
	if err := <-subscribed; err != nil {
		t.Fatalf("subscription on B: %v", err)
	}
	last, ok := events[len(events)-1].(*a2av1.TaskStatusUpdateEvent)
	if !ok || last.Status.State != a2av1.TaskStateFailed || statusReason(last.Status) != fault.ReasonHostLost {
		t.Errorf("the subscriber's last event = %#v, want failed host_lost", events[len(events)-1])
	}
	done := waitState(t, ctx, b, again.ID, a2av1.TaskStateCompleted)
	if len(done.Artifacts) != 1 {
		t.Errorf("the idempotent task completed with %d artifacts", len(done.Artifacts))
	}
	proxies.Set(faultnet.Faults{})
	testutil.Eventually(t, 90*time.Second, "A to stop its calls once it reconnects", func() bool { return a.svc.Running() == 0 })
}

// A host that closes hands its tasks back at once, without a lease to
// wait for (the TTL here is an hour): it ends the task of a skill that is
// not idempotent host_lost itself, and another host runs the idempotent
// one again. While it drains, new tasks are refused (draining) and the
// running ones go on.
func TestLeaseHandBackOnClose(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c := natstest.Start(t, 3)
	plugins, cache := leasePlugins(t), t.TempDir()
	opts := leaseOpts{nats: c.URL(), ttl: time.Hour, sweep: time.Hour}
	a, b := startLeaseHost(t, plugins, cache, opts), startLeaseHost(t, plugins, cache, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	spin := startTask(t, ctx, a, skillMsg("spin", a2av1.NewDataPart(map[string]any{})))
	again := startTask(t, ctx, a, skillMsg("slow_again", a2av1.NewDataPart(map[string]any{"steps": 20, "ms": 100})))
	waitWorking(t, ctx, a, spin.ID)
	waitWorking(t, ctx, a, again.ID)

	dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	drained := make(chan error, 1)
	go func() { drained <- a.svc.Drain(dctx) }()
	testutil.Eventually(t, 10*time.Second, "A to drain", a.svc.Draining)
	_, rerr := rpc(t, a.URL, "SendMessage", sendParams("echo", `{"text":"late"}`), nil)
	if rerr == nil || rerr.Code != -32106 || !strings.Contains(string(rerr.Data), `"reason":"draining"`) {
		t.Errorf("a new task on a draining host: %+v, want -32106 draining", rerr)
	}
	if err := <-drained; err == nil {
		t.Error("Drain returned before the spin task ended")
	}
	dcancel()
	if err := a.svc.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	lost := waitState(t, ctx, b, spin.ID, a2av1.TaskStateFailed)
	if r := statusReason(lost.Status); r != fault.ReasonHostLost {
		t.Errorf("the spin task failed with reason %q, want %s", r, fault.ReasonHostLost)
	}
	waitState(t, ctx, b, again.ID, a2av1.TaskStateCompleted)
}
