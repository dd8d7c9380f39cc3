package a2a_test

import (
	"context"
	"errors"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// streamMsgs is the number of messages the stream of bucket holds.
func streamMsgs(t *testing.T, st *store.Store, bucket string) uint64 {
	t.Helper()
	s, err := st.JetStream().Stream(context.Background(), "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// A blocking SendMessage writes its task durably once, terminal (one record
// and one index key); a returnImmediately one is stored submitted first.
func TestBlockingTaskIsStoredOnce(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(t, ctx, h.URL)
	tasks0, index0 := streamMsgs(t, h.store, a2a.TasksBucket), streamMsgs(t, h.store, a2a.IndexBucket)
	const n = 5
	for i := range n {
		res, err := cl.SendMessage(ctx, skillMsg("echo", a2av1.NewDataPart(map[string]any{"i": i})))
		if err != nil {
			t.Fatal(err)
		}
		if task := res.(*a2av1.Task); task.Status.State != a2av1.TaskStateCompleted {
			t.Fatalf("task %d: %s", i, task.Status.State)
		}
	}
	got := []uint64{streamMsgs(t, h.store, a2a.TasksBucket) - tasks0, streamMsgs(t, h.store, a2a.IndexBucket) - index0}
	if diff := cmp.Diff([]uint64{n, n}, got); diff != "" {
		t.Errorf("durable writes for %d blocking tasks (records, index keys) (-want +got):\n%s", n, diff)
	}
	req := skillMsg("echo", a2av1.NewDataPart(map[string]any{}))
	req.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
	res, err := cl.SendMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if task := res.(*a2av1.Task); task.Status.State == "" || task.Status.State.Terminal() && task.Status.State != a2av1.TaskStateCompleted {
		t.Errorf("returnImmediately task: %s", task.Status.State)
	}
}

// While a blocking SendMessage runs its task, the task's owner sees it
// working (GetTask, ListTasks, SubscribeToTask) and can cancel it once; the
// blocked caller and the subscriber both see it end canceled, and so does
// GetTask afterwards.
func TestBlockingTaskWhileItRuns(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(t, ctx, h.URL)
	req := skillMsg("spin", a2av1.NewDataPart(map[string]any{}))
	req.Message.ContextID = "while-it-runs"
	type sent struct {
		task *a2av1.Task
		err  error
	}
	done := make(chan sent, 1)
	go func() {
		res, err := cl.SendMessage(ctx, req)
		task, _ := res.(*a2av1.Task)
		done <- sent{task, err}
	}()
	var id a2av1.TaskID
	if !testutil.PollEvery(30*time.Second, 20*time.Millisecond, func() bool {
		list, err := cl.ListTasks(ctx, &a2av1.ListTasksRequest{ContextID: "while-it-runs"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Tasks) == 1 && list.Tasks[0].Status.State == a2av1.TaskStateWorking {
			id = list.Tasks[0].ID
		}
		return id != ""
	}) {
		t.Fatal("the running task was never listed")
	}
	if got, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: id}); err != nil || got.Status.State != a2av1.TaskStateWorking {
		t.Fatalf("GetTask of the running task: %v, %v", got, err)
	}
	events := make(chan []string, 1)
	subscribed := make(chan struct{})
	go func() {
		var got []string
		first := true
		for ev, err := range cl.SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: id}) {
			if first {
				close(subscribed)
				first = false
			}
			if err != nil {
				got = append(got, "error: "+err.Error())
				break
			}
			switch e := ev.(type) {
			case *a2av1.Task:
				got = append(got, "task "+string(e.Status.State))
			case *a2av1.TaskStatusUpdateEvent:
				got = append(got, "status "+string(e.Status.State))
			default:
				got = append(got, "other")
			}
		}
		events <- got
	}()
	<-subscribed
	canceled, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: id})
	if err != nil || canceled.Status.State != a2av1.TaskStateCanceled {
		t.Fatalf("CancelTask: %v, %v", canceled, err)
	}
	if _, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: id}); !errors.Is(err, a2av1.ErrTaskNotCancelable) {
		t.Errorf("second CancelTask: %v, want task not cancelable", err)
	}
	res := <-done
	if res.err != nil || res.task == nil || res.task.ID != id || res.task.Status.State != a2av1.TaskStateCanceled {
		t.Fatalf("the blocked SendMessage: %v, %v; want the task canceled", res.task, res.err)
	}
	if diff := cmp.Diff([]string{"task TASK_STATE_WORKING", "status TASK_STATE_CANCELED"}, <-events); diff != "" {
		t.Errorf("subscriber's events (-want +got):\n%s", diff)
	}
	if got, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: id}); err != nil || got.Status.State != a2av1.TaskStateCanceled {
		t.Errorf("GetTask after the cancel: %v, %v", got, err)
	}
}
