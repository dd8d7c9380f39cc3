package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"
)

// progressGuest is the Go test plugin of testdata/progress (built with the
// SDK), compiled to wasm once per test binary run.
var progressGuest struct {
	once sync.Once
	wasm []byte
	err  error
}

// mustProgressGuest returns the test plugin's bytes, building it on first use.
func mustProgressGuest(t *testing.T) []byte {
	t.Helper()
	progressGuest.once.Do(func() {
		dir, err := os.MkdirTemp("", "a2a-progress-guest-")
		if err != nil {
			progressGuest.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "progress.wasm")
		cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", out, ".")
		cmd.Dir = filepath.Join("testdata", "progress")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=readonly")
		if b, err := cmd.CombinedOutput(); err != nil {
			progressGuest.err = fmt.Errorf("building the progress test plugin: %w\n%s", err, b)
			return
		}
		progressGuest.wasm, progressGuest.err = os.ReadFile(out)
	})
	if progressGuest.err != nil {
		t.Fatal(progressGuest.err)
	}
	return progressGuest.wasm
}

// mustProgressPluginDir lays out a plugin folder (plugin.yaml + the built
// wasm) under a fresh temporary directory and returns that directory.
func mustProgressPluginDir(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "progress")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"plugin.yaml":   mustRead(t, filepath.Join("testdata", "progress", "plugin.yaml")),
		"progress.wasm": mustProgressGuest(t),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// streamEvent is what a client sees of one stream event.
type streamEvent struct {
	Kind  string   // task, status or artifact
	State string   // the task state (task and status events)
	Role  string   // the status message's role, if any
	Parts []string // "text:…" or "data:<json>" of the status message or artifact
	Last  bool     // the artifact's lastChunk
}

func describeParts(t *testing.T, parts a2av1.ContentParts) []string {
	t.Helper()
	var out []string
	for _, p := range parts {
		switch {
		case p.Data() != nil:
			b, err := json.Marshal(p.Data())
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, "data:"+string(b))
		default:
			out = append(out, "text:"+p.Text())
		}
	}
	return out
}

// describeEvent renders ev and checks it belongs to task id (taken from the
// first event, the Task).
func describeEvent(t *testing.T, ev a2av1.Event, id *a2av1.TaskID, ctxID *string) streamEvent {
	t.Helper()
	status := func(s a2av1.TaskStatus) streamEvent {
		e := streamEvent{State: string(s.State)}
		if m := s.Message; m != nil {
			e.Role, e.Parts = string(m.Role), describeParts(t, m.Parts)
			if m.TaskID != *id || m.ContextID != *ctxID {
				t.Errorf("status message names task %q context %q, want %q %q", m.TaskID, m.ContextID, *id, *ctxID)
			}
		}
		return e
	}
	var (
		e       streamEvent
		gotID   a2av1.TaskID
		gotCtxt string
	)
	switch ev := ev.(type) {
	case *a2av1.Task:
		if *id == "" {
			*id, *ctxID = ev.ID, ev.ContextID
		}
		e, gotID, gotCtxt = status(ev.Status), ev.ID, ev.ContextID
		e.Kind = "task"
	case *a2av1.TaskStatusUpdateEvent:
		e, gotID, gotCtxt = status(ev.Status), ev.TaskID, ev.ContextID
		e.Kind = "status"
	case *a2av1.TaskArtifactUpdateEvent:
		e = streamEvent{Kind: "artifact", Parts: describeParts(t, ev.Artifact.Parts), Last: ev.LastChunk}
		gotID, gotCtxt = ev.TaskID, ev.ContextID
	default:
		t.Fatalf("unexpected stream event %T", ev)
	}
	if gotID != *id || gotCtxt != *ctxID {
		t.Errorf("%s event names task %q context %q, want %q %q", e.Kind, gotID, gotCtxt, *id, *ctxID)
	}
	return e
}

// TestStreamingProgress runs a Go plugin built with the SDK that calls
// ctx.Progress three times: over SendStreamingMessage each report reaches the
// a2a-go v2 client as a working statusUpdate whose agent message carries the
// report's text and {"percent":…}, in order, between the working status and
// the output artifact.
func TestStreamingProgress(t *testing.T) {
	t.Parallel()
	h := startHost(t, mustProgressPluginDir(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(t, ctx, h.URL)

	var (
		got   []streamEvent
		id    a2av1.TaskID
		ctxID string
	)
	for ev, err := range cl.SendStreamingMessage(ctx, skillMsg("steps", a2av1.NewDataPart(map[string]any{}))) {
		if err != nil {
			t.Fatalf("stream after %d events: %v", len(got), err)
		}
		got = append(got, describeEvent(t, ev, &id, &ctxID))
	}
	const (
		working = string(a2av1.TaskStateWorking)
		agent   = string(a2av1.MessageRoleAgent)
	)
	progress := func(text string, percent int) streamEvent {
		return streamEvent{Kind: "status", State: working, Role: agent,
			Parts: []string{"text:" + text, fmt.Sprintf(`data:{"percent":%d}`, percent)}}
	}
	want := []streamEvent{
		{Kind: "task", State: string(a2av1.TaskStateSubmitted)},
		{Kind: "status", State: working},
		progress("a", 25),
		progress("b", 50),
		progress("c", 75),
		{Kind: "artifact", Parts: []string{`data:{"done":true}`}, Last: true},
		{Kind: "status", State: string(a2av1.TaskStateCompleted)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("stream events (-want +got):\n%s", diff)
	}

	task, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("GetTask = %s with %d artifacts, want completed with 1", task.Status.State, len(task.Artifacts))
	}
	if diff := cmp.Diff([]string{`data:{"done":true}`}, describeParts(t, task.Artifacts[0].Parts)); diff != "" {
		t.Errorf("stored artifact (-want +got):\n%s", diff)
	}
}
