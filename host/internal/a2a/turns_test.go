package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// followUp is a text message continuing task id.
func followUp(id a2av1.TaskID, text string) *a2av1.SendMessageRequest {
	m := a2av1.NewMessage(a2av1.MessageRoleUser, a2av1.NewTextPart(text))
	m.TaskID = id
	return &a2av1.SendMessageRequest{Message: m}
}

// statusText is the text of a task's status message ("" if none).
func statusText(t *a2av1.Task) string {
	if t.Status.Message == nil || len(t.Status.Message.Parts) == 0 {
		return ""
	}
	s, _ := t.Status.Message.Parts[0].Content.(a2av1.Text)
	return string(s)
}

// TestMultiTurnTask: a skill asks (input-required, its question as the
// status message and in the history), the follow-up with the task's id
// runs its next turn with the history, a second question is asked, and the
// last answer completes the task; every move is in the provenance chain.
func TestMultiTurnTask(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	h := startSigningHostOn(t, mustProgressPluginDir(t), store.Config{DataDir: t.TempDir()}, t.TempDir(), signer)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(t, ctx, h.URL)

	res, err := cl.SendMessage(ctx, skillMsg("ask", a2av1.NewDataPart(map[string]any{})))
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2av1.Task)
	if task.Status.State != a2av1.TaskStateInputRequired || statusText(task) != "question 1" {
		t.Fatalf("first turn: %s %q, want input-required %q", task.Status.State, statusText(task), "question 1")
	}
	if got := describeParts(t, task.Status.Message.Parts); !cmp.Equal(got, []string{"text:question 1", `data:{"n":1}`}) {
		t.Errorf("question parts = %v", got)
	}
	for i, answer := range []string{"again", "done"} {
		res, err = cl.SendMessage(ctx, followUp(task.ID, answer))
		if err != nil {
			t.Fatalf("follow-up %d: %v", i+1, err)
		}
		task = res.(*a2av1.Task)
	}
	if task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("after the last answer: %s with %d artifacts, want completed with 1", task.Status.State, len(task.Artifacts))
	}
	if diff := cmp.Diff([]string{`data:{"answers":["again","done"],"turn":3}`}, describeParts(t, task.Artifacts[0].Parts)); diff != "" {
		t.Errorf("artifact (-want +got):\n%s", diff)
	}
	var roles []string
	for _, m := range task.History {
		roles = append(roles, string(m.Role))
	}
	wantRoles := []string{"ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT", "ROLE_USER"}
	if diff := cmp.Diff(wantRoles, roles); diff != "" {
		t.Errorf("history roles (-want +got):\n%s", diff)
	}

	// A terminal task still refuses follow-ups: -32004 task_continuation.
	_, err = cl.SendMessage(ctx, followUp(task.ID, "more"))
	if !errors.Is(err, a2av1.ErrUnsupportedOperation) {
		t.Errorf("follow-up to a completed task: %v, want unsupported operation", err)
	}

	body, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	rep := provenance.VerifyTask(body, signer.KeySet())
	if !rep.Valid {
		t.Fatalf("provenance: %+v", rep)
	}
	var states []string
	chain, _ := provenance.FromMetadata(task.Metadata)
	for _, l := range chain.Links {
		if l.Kind == provenance.KindTransition {
			states = append(states, l.To)
		}
	}
	want := []string{"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING",
		"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("signed transitions (-want +got):\n%s", diff)
	}
}

// TestFollowUpRules: another owner's task id is task_not_found; a task
// waiting for auth is auth-required; a follow-up may not name another
// skill or context; canceling a waiting task cancels it.
func TestFollowUpRules(t *testing.T) {
	t.Parallel()
	h := startHost(t, mustProgressPluginDir(t))
	alice, bob := auth.With(context.Background(), auth.Local("alice")), auth.With(context.Background(), auth.Local("bob"))
	ask := func(data map[string]any) *a2av1.Task {
		t.Helper()
		task, err := h.svc.SendMessage(alice, skillMsg("ask", a2av1.NewDataPart(data)))
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	task := ask(map[string]any{"auth": true})
	if task.Status.State != a2av1.TaskStateAuthRequired || statusText(task) != "sign in to continue" {
		t.Fatalf("auth turn: %s %q", task.Status.State, statusText(task))
	}
	other := followUp(task.ID, "x")
	other.Message.Metadata = map[string]any{"skillId": "steps"}
	wrongCtx := followUp(task.ID, "x")
	wrongCtx.Message.ContextID = "another-context"
	noID := followUp(task.ID, "x")
	noID.Message.ID = ""
	tests := []struct {
		name   string
		ctx    context.Context
		req    *a2av1.SendMessageRequest
		kind   fault.Kind
		reason string
	}{
		{"another owner's task", bob, followUp(task.ID, "x"), fault.TaskNotFound, fault.ReasonTaskNotFound},
		{"another skill", alice, other, fault.InvalidParams, fault.ReasonInvalidParams},
		{"another context", alice, wrongCtx, fault.InvalidParams, fault.ReasonInvalidParams},
		{"no messageId", alice, noID, fault.InvalidParams, fault.ReasonInvalidParams},
		{"unknown task", alice, followUp("nope", "x"), fault.TaskNotFound, fault.ReasonTaskNotFound},
	}
	for _, tt := range tests {
		_, err := h.svc.SendMessage(tt.ctx, tt.req)
		fe := fault.From(err)
		if err == nil || fe.Kind != tt.kind || fe.Reason != tt.reason {
			t.Errorf("%s: %v, want %s %s", tt.name, err, tt.kind, tt.reason)
		}
	}
	got, err := h.svc.GetTask(alice, &a2av1.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2av1.TaskStateAuthRequired {
		t.Fatalf("after refused follow-ups: %v %v, want still auth-required", got, err)
	}
	canceled, err := h.svc.CancelTask(alice, &a2av1.CancelTaskRequest{ID: task.ID})
	if err != nil || canceled.Status.State != a2av1.TaskStateCanceled {
		t.Fatalf("cancel a waiting task: %v %v", canceled, err)
	}
	_, err = h.svc.SendMessage(alice, followUp(task.ID, "late"))
	if fe := fault.From(err); fe.Kind != fault.UnsupportedOperation || fe.Reason != fault.ReasonTaskContinuation {
		t.Errorf("follow-up to a canceled task: %v, want -32004 task_continuation", err)
	}
}

// TestFollowUpStreams: SendStreamingMessage of a follow-up streams that
// turn, and a SubscribeToTask opened while the task waits sees the next
// turn to its end.
func TestFollowUpStreams(t *testing.T) {
	t.Parallel()
	h := startHost(t, mustProgressPluginDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(t, ctx, h.URL)
	res, err := cl.SendMessage(ctx, skillMsg("ask", a2av1.NewDataPart(map[string]any{})))
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2av1.Task).ID

	subscribed := make(chan []streamEvent, 1)
	sub, err := h.svc.SubscribeToTask(auth.With(ctx, auth.Local("test")), &a2av1.SubscribeToTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer sub.Close()
		var evs []streamEvent
		var tid a2av1.TaskID
		var c string
		for {
			ev, err := sub.NextEvent(ctx)
			if err != nil {
				break
			}
			evs = append(evs, describeEvent(t, ev, &tid, &c))
		}
		subscribed <- evs
	}()

	var got []streamEvent
	var tid a2av1.TaskID
	var c string
	for ev, err := range cl.SendStreamingMessage(ctx, followUp(id, "again")) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, describeEvent(t, ev, &tid, &c))
	}
	const working, asked = string(a2av1.TaskStateWorking), string(a2av1.TaskStateInputRequired)
	question := streamEvent{Kind: "status", State: asked, Role: string(a2av1.MessageRoleAgent), Parts: []string{"text:question 2"}}
	want := []streamEvent{{Kind: "task", State: working}, {Kind: "status", State: working}, question}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("follow-up stream (-want +got):\n%s", diff)
	}
	waiting := streamEvent{Kind: "task", State: asked, Role: string(a2av1.MessageRoleAgent), Parts: []string{"text:question 1", `data:{"n":1}`}}
	wantSub := []streamEvent{waiting, {Kind: "status", State: working}, question}
	if diff := cmp.Diff(wantSub, <-subscribed); diff != "" {
		t.Errorf("subscription across the turn (-want +got):\n%s", diff)
	}
}

// TestInputTimeout: a task left waiting longer than InputTimeout fails
// with reason input_timeout; one answered in time is not touched.
func TestInputTimeout(t *testing.T) {
	t.Parallel()
	h := startHostWith(t, mustProgressPluginDir(t), store.Config{DataDir: t.TempDir()}, t.TempDir(), nil,
		func(_ *store.Store, c *a2a.ServiceConfig) { c.InputTimeout = time.Millisecond })
	ctx := auth.With(context.Background(), auth.Local("alice"))
	task, err := h.svc.SendMessage(ctx, skillMsg("ask", a2av1.NewDataPart(map[string]any{})))
	if err != nil || task.Status.State != a2av1.TaskStateInputRequired {
		t.Fatalf("ask: %v %v", task, err)
	}
	testutil.Eventually(t, 30*time.Second, "the waiting task expires", func() bool {
		n, err := h.svc.ExpireInterrupted(ctx)
		return err == nil && n == 1
	})
	got, err := h.svc.GetTask(ctx, &a2av1.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	reason, _ := got.Status.Message.Metadata["reason"].(string)
	if got.Status.State != a2av1.TaskStateFailed || reason != fault.ReasonInputTimeout {
		t.Errorf("expired task: %s reason %q, want failed input_timeout", got.Status.State, reason)
	}
	if n, err := h.svc.ExpireInterrupted(ctx); err != nil || n != 0 {
		t.Errorf("second sweep: %d %v, want nothing left", n, err)
	}
}
