package host_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/devkit"
)

// notesOnce builds the first-party notes plugin (it keeps notes in the
// session context) once per test binary.
var notesOnce = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "skillhost-notes-")
	if err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "notes")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return "", err
	}
	manifest, err := os.ReadFile("../plugins/notes/plugin.yaml")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dst, "plugin.yaml"), manifest, 0o644); err != nil {
		return "", err
	}
	_, err = devkit.Build(context.Background(), "../plugins/notes", devkit.BuildOptions{Out: filepath.Join(dst, "notes.wasm")})
	return dir, err
})

func mustNotesPlugins(t *testing.T) string {
	t.Helper()
	dir, err := notesOnce()
	if err != nil {
		t.Fatalf("build plugins/notes: %v", err)
	}
	return dir
}

// A2A contexts are sessions: a skill reads, in a later message of the same
// contextId, what it wrote in an earlier one; another context (or another
// principal's same contextId) does not see it.
func TestA2AContextIsSession(t *testing.T) {
	t.Parallel()
	th := mustHost(t, mustNotesPlugins(t))
	for _, binding := range []a2av1.TransportProtocol{a2av1.TransportProtocolJSONRPC, a2av1.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cl := mustClient(ctx, t, th.URL, binding)
			run := func(contextID, skill string, data map[string]any) map[string]any {
				t.Helper()
				req := message(skill, data)
				req.Message.ContextID = contextID
				res, err := cl.SendMessage(ctx, req)
				if err != nil {
					t.Fatalf("%s: %v", skill, err)
				}
				task, ok := res.(*a2av1.Task)
				if !ok || task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
					t.Fatalf("%s = %+v (status message %+v)", skill, res, task.Status.Message)
				}
				out, _ := task.Artifacts[0].Parts[0].Data().(map[string]any)
				return out
			}
			mine := "ctx-" + string(binding) + "-" + time.Now().Format("150405.000000")
			run(mine, "note_add", map[string]any{"text": "first"})
			run(mine, "note_add", map[string]any{"text": "second"})
			var texts []string
			for _, n := range run(mine, "note_list", map[string]any{})["notes"].([]any) {
				texts = append(texts, n.(map[string]any)["text"].(string))
			}
			if diff := cmp.Diff([]string{"first", "second"}, texts); diff != "" {
				t.Errorf("notes of the context (-want +got):\n%s", diff)
			}
			if n := run(mine+"-other", "note_list", map[string]any{})["count"]; n != float64(0) {
				t.Errorf("another context sees %v notes, want 0", n)
			}
			// A message without contextId gets a fresh context, and a session
			// once its skill uses the context.
			if n := run("", "note_add", map[string]any{"text": "alone"})["count"]; n != float64(1) {
				t.Errorf("fresh context: count %v, want 1", n)
			}
		})
	}
}
