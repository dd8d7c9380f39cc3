package a2a_test

import (
	"context"
	"errors"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/google/go-cmp/cmp"
)

func mustClient(t *testing.T, ctx context.Context, base string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(ctx, base)
	if err != nil {
		t.Fatalf("resolve card: %v", err)
	}
	cl, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatalf("client from card: %v", err)
	}
	return cl
}

func skillMsg(skill string, parts ...*a2av1.Part) *a2av1.SendMessageRequest {
	m := a2av1.NewMessage(a2av1.MessageRoleUser, parts...)
	m.Metadata = map[string]any{"skillId": skill}
	return &a2av1.SendMessageRequest{Message: m}
}

func TestV1ClientSendStreamCancel(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(t, ctx, h.URL)

	t.Run("send data part", func(t *testing.T) {
		res, err := cl.SendMessage(ctx, skillMsg("echo", a2av1.NewDataPart(map[string]any{"text": "hi"})))
		if err != nil {
			t.Fatal(err)
		}
		task, ok := res.(*a2av1.Task)
		if !ok {
			t.Fatalf("result %T, want a task", res)
		}
		if task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
			t.Fatalf("task = %s with %d artifacts", task.Status.State, len(task.Artifacts))
		}
		if diff := cmp.Diff(map[string]any{"text": "hi"}, task.Artifacts[0].Parts[0].Data()); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
		got, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: task.ID})
		if err != nil || got.Status.State != a2av1.TaskStateCompleted {
			t.Errorf("GetTask = %v, %v", got, err)
		}
	})
	t.Run("send text part", func(t *testing.T) {
		res, err := cl.SendMessage(ctx, skillMsg("echo", a2av1.NewTextPart("hello")))
		if err != nil {
			t.Fatal(err)
		}
		task := res.(*a2av1.Task)
		if diff := cmp.Diff(map[string]any{"text": "hello"}, task.Artifacts[0].Parts[0].Data()); diff != "" {
			t.Errorf("text input not passed as {text} (-want +got):\n%s", diff)
		}
	})
	t.Run("stream", func(t *testing.T) {
		var kinds []string
		for ev, err := range cl.SendStreamingMessage(ctx, skillMsg("echo", a2av1.NewDataPart(map[string]any{"n": 1.0}))) {
			if err != nil {
				t.Fatal(err)
			}
			switch e := ev.(type) {
			case *a2av1.Task:
				kinds = append(kinds, "task:"+string(e.Status.State))
			case *a2av1.TaskStatusUpdateEvent:
				kinds = append(kinds, "status:"+string(e.Status.State))
			case *a2av1.TaskArtifactUpdateEvent:
				kinds = append(kinds, "artifact")
			}
		}
		want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING", "artifact", "status:TASK_STATE_COMPLETED"}
		if diff := cmp.Diff(want, kinds); diff != "" {
			t.Errorf("stream (-want +got):\n%s", diff)
		}
	})
	t.Run("cancel a looping skill", func(t *testing.T) {
		req := skillMsg("spin", a2av1.NewDataPart(map[string]any{}))
		req.Config = &a2av1.SendMessageConfig{ReturnImmediately: true}
		res, err := cl.SendMessage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		task := res.(*a2av1.Task)
		if task.Status.State.Terminal() {
			t.Fatalf("returnImmediately returned a %s task", task.Status.State)
		}
		canceled, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: task.ID})
		if err != nil || canceled.Status.State != a2av1.TaskStateCanceled {
			t.Fatalf("CancelTask = %v, %v", canceled, err)
		}
		if _, err := cl.CancelTask(ctx, &a2av1.CancelTaskRequest{ID: task.ID}); !errors.Is(err, a2av1.ErrTaskNotCancelable) {
			t.Errorf("second cancel: %v, want task not cancelable", err)
		}
		for ev, err := range cl.SubscribeToTask(ctx, &a2av1.SubscribeToTaskRequest{ID: task.ID}) {
			if !errors.Is(err, a2av1.ErrUnsupportedOperation) {
				t.Errorf("subscribe to a canceled task: %v %v, want unsupported operation", ev, err)
			}
			break
		}
		got, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: task.ID})
		if err != nil || got.Status.State != a2av1.TaskStateCanceled {
			t.Errorf("after cancel GetTask = %v, %v", got, err)
		}
	})
	t.Run("outcomes map to task states", func(t *testing.T) {
		tests := []struct {
			skill string
			input map[string]any
			want  a2av1.TaskState
		}{
			{"crash", map[string]any{}, a2av1.TaskStateFailed},
			{"strict", map[string]any{"n": "not a number"}, a2av1.TaskStateRejected},
		}
		for _, tt := range tests {
			res, err := cl.SendMessage(ctx, skillMsg(tt.skill, a2av1.NewDataPart(tt.input)))
			if err != nil {
				t.Fatal(err)
			}
			task := res.(*a2av1.Task)
			if task.Status.State != tt.want || task.Status.Message == nil || task.Status.Message.Metadata["reason"] == "" {
				t.Errorf("%s: state %s, status message %+v", tt.skill, task.Status.State, task.Status.Message)
			}
		}
	})
	t.Run("routing errors decode as invalid params", func(t *testing.T) {
		_, err := cl.SendMessage(ctx, skillMsg("no-such-skill", a2av1.NewDataPart(map[string]any{})))
		if !errors.Is(err, a2av1.ErrInvalidParams) {
			t.Errorf("unknown skill: %v, want ErrInvalidParams", err)
		}
	})
	t.Run("unknown task", func(t *testing.T) {
		_, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: "no-such-task"})
		if !errors.Is(err, a2av1.ErrTaskNotFound) {
			t.Errorf("unknown task: %v", err)
		}
	})
}
