package a2a_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/natstest"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// mustBothPlugins is a plugin folder with the progress test plugin and the
// hostile fixture plugin.
func mustBothPlugins(t *testing.T) string {
	t.Helper()
	root := mustProgressPluginDir(t)
	dir := filepath.Join(root, "hostile")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plugin.yaml", "hostile.wasm"} {
		if err := os.WriteFile(filepath.Join(dir, name), mustRead(t, filepath.Join("testdata", "plugins", "hostile", name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// Two hosts on one 3-node NATS cluster: a task running on host A is seen to
// completion by a subscriber on host B, in order; a cancel sent to host B
// stops the sandbox call running on host A.
func TestCrossHostTasks(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 3-node NATS cluster")
	}
	c := natstest.Start(t, 3)
	plugins := mustBothPlugins(t)
	cache := t.TempDir()
	a := startHostOn(t, plugins, store.Config{URL: c.URL()}, cache)
	b := startHostOn(t, plugins, store.Config{URL: c.URL()}, cache)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	clA, clB := mustClient(t, ctx, a.URL), mustClient(t, ctx, b.URL)

	t.Run("subscriber on B sees a task on A to completion", func(t *testing.T) {
		// A runs the slow skill (20 steps of 100ms), streaming to its own
		// client; once it is under way B subscribes.
		req := skillMsg("slow", a2av1.NewDataPart(map[string]any{"steps": 20, "ms": 100}))
		var id a2av1.TaskID
		var ctxID string
		started := false
		for ev, err := range clA.SendStreamingMessage(ctx, req) {
			if err != nil {
				t.Fatalf("stream on A: %v", err)
			}
			if e := describeEvent(t, ev, &id, &ctxID); e.Kind == "status" && len(e.Parts) > 0 {
				started = true // the first progress report: the task runs on A
				break
			}
		}
		if !started {
			t.Fatal("the task on A ended before reporting progress")
		}
		var got []streamEvent
		progress := 0
		for ev, err := range clB.SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				t.Fatalf("subscription on B after %d events: %v", len(got), err)
			}
			e := describeEvent(t, ev, &id, &ctxID)
			if e.Kind == "status" && len(e.Parts) > 0 {
				progress++ // progress reports: how many depends on when B joined
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
			t.Errorf("events on B, progress aside (-want +got):\n%s", diff)
		}
		if progress == 0 {
			t.Error("B saw no progress report of the running task")
		}
	})

	t.Run("cancel on B stops the call on A", func(t *testing.T) {
		// spin loops until canceled or its 20s limit; A's SendMessage blocks
		// until A's sandbox call has returned.
		req := skillMsg("spin", a2av1.NewDataPart(map[string]any{}))
		req.Message.ContextID = "cross-host-cancel"
		type sent struct {
			task *a2av1.Task
			err  error
			at   time.Time
		}
		done := make(chan sent, 1)
		go func() {
			res, err := clA.SendMessage(ctx, req)
			task, _ := res.(*a2av1.Task)
			done <- sent{task, err, time.Now()}
		}()
		var id a2av1.TaskID
		testutil.Eventually(t, 30*time.Second, "the spin task to start working on A", func() bool {
			list, err := clB.ListTasks(ctx, &a2av1.ListTasksRequest{ContextID: "cross-host-cancel"})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range list.Tasks {
				if tk.Status.State == a2av1.TaskStateWorking {
					id = tk.ID
				}
			}
			return id != ""
		})
		canceledAt := time.Now()
		if _, err := clB.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: id}); err != nil {
			t.Fatalf("CancelTask on B: %v", err)
		}
		var res sent
		select {
		case res = <-done:
		case <-time.After(15 * time.Second): // well inside the skill's 20s limit
			t.Fatal("A's call still running 15s after the cancel on B")
		}
		if res.err != nil {
			t.Fatalf("SendMessage on A: %v", res.err)
		}
		if res.task == nil || res.task.Status.State != a2av1.TaskStateCanceled {
			t.Fatalf("task on A ended as %v, want canceled", fmt.Sprint(res.task))
		}
		t.Logf("A's sandbox call stopped %v after the cancel on B", res.at.Sub(canceledAt).Round(time.Millisecond))
	})
}
