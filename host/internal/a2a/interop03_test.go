package a2a_test

import (
	"context"
	"testing"
	"time"

	legacy "github.com/a2aproject/a2a-go/a2a"
	legacyclient "github.com/a2aproject/a2a-go/a2aclient"
	legacycard "github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/google/go-cmp/cmp"
)

// TestV03Client drives the host with the a2a-go v0.3 client (A2A 0.3):
// it reads the union card (url + preferredTransport) and speaks message/send.
func TestV03Client(t *testing.T) {
	t.Parallel()
	h := startHost(t, "testdata/plugins")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	card, err := legacycard.DefaultResolver.Resolve(ctx, h.URL)
	if err != nil {
		t.Fatalf("v0.3 resolver: %v", err)
	}
	cl, err := legacyclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatalf("v0.3 client: %v", err)
	}
	msg := legacy.NewMessage(legacy.MessageRoleUser, legacy.DataPart{Data: map[string]any{"text": "from 0.3"}})
	msg.Metadata = map[string]any{"skillId": "echo"}
	res, err := cl.SendMessage(ctx, &legacy.MessageSendParams{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*legacy.Task)
	if !ok {
		t.Fatalf("result %T, want a task", res)
	}
	if task.Status.State != legacy.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("task %s, %d artifacts", task.Status.State, len(task.Artifacts))
	}
	dp, ok := task.Artifacts[0].Parts[0].(legacy.DataPart)
	if !ok {
		t.Fatalf("artifact part %T, want a data part", task.Artifacts[0].Parts[0])
	}
	if diff := cmp.Diff(map[string]any{"text": "from 0.3"}, dp.Data); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	got, err := cl.GetTask(ctx, &legacy.TaskQueryParams{ID: task.ID})
	if err != nil || got.Status.State != legacy.TaskStateCompleted {
		t.Errorf("tasks/get = %+v, %v", got, err)
	}

	var states []legacy.TaskState
	for ev, err := range cl.SendStreamingMessage(ctx, &legacy.MessageSendParams{Message: msg}) {
		if err != nil {
			t.Fatal(err)
		}
		if su, ok := ev.(*legacy.TaskStatusUpdateEvent); ok {
			states = append(states, su.Status.State)
		}
	}
	if diff := cmp.Diff([]legacy.TaskState{legacy.TaskStateWorking, legacy.TaskStateCompleted}, states); diff != "" {
		t.Errorf("message/stream states (-want +got):\n%s", diff)
	}
}
