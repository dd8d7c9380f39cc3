package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
)

// contextMemManifest wraps testdata/context_mem.wasm, whose skills write
// and read one value of their session's context.
const contextMemManifest = `name: memory
version: 1.0.0
description: Keeps a value in the session context
wasm: context_mem.wasm
skills:
  - {id: remember, function: remember, description: Stores "remembered" under k}
  - {id: recall, function: recall, description: Reads k}
`

func mustContextPlugin(t *testing.T) string {
	t.Helper()
	wasm, err := os.ReadFile("testdata/context_mem.wasm")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pdir := filepath.Join(dir, "memory")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "context_mem.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "plugin.yaml"), []byte(contextMemManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A2A contexts are sessions: a skill reads, in a later message of the same
// contextId, what it wrote in an earlier one; another context does not see
// it; a message without contextId still gets a session when its skill uses
// the context.
func TestA2AContextIsSession(t *testing.T) {
	t.Parallel()
	th := mustHost(t, mustContextPlugin(t))
	for _, binding := range []a2av1.TransportProtocol{a2av1.TransportProtocolJSONRPC, a2av1.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cl := mustClient(ctx, t, th.URL, binding)
			// run sends a message of contextID to skill; the output is the
			// host function's reply {"ok":…, "result"|"error": …}.
			run := func(contextID, skill string) map[string]any {
				t.Helper()
				req := message(skill, map[string]any{})
				req.Message.ContextID = contextID
				res, err := cl.SendMessage(ctx, req)
				if err != nil {
					t.Fatalf("%s: %v", skill, err)
				}
				task, ok := res.(*a2av1.Task)
				if !ok || task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
					t.Fatalf("%s = %+v", skill, res)
				}
				out, _ := task.Artifacts[0].Parts[0].Data().(map[string]any)
				if out["ok"] != true {
					t.Fatalf("%s: the context host function failed: %v", skill, out)
				}
				result, _ := out["result"].(map[string]any)
				return result
			}
			mine := "ctx-" + string(binding)
			run(mine, "remember")
			if got := run(mine, "recall"); got["found"] != true || got["value"] != "remembered" {
				t.Errorf("recall in the same context = %v, want the remembered value", got)
			}
			if got := run(mine+"-other", "recall"); got["found"] != false {
				t.Errorf("recall in another context = %v, want found:false", got)
			}
			if got := run("", "remember"); got["found"] != true {
				t.Errorf("remember without contextId = %v", got)
			}
		})
	}
}

// A skill run through A2A that calls another agent with agent_call passes
// its context's session on: what the called skill stores is in that
// context afterwards (it used to be called without a session and fail with
// no_session).
func TestA2AContextReachesNestedCalls(t *testing.T) {
	t.Parallel()
	dir := mustContextPlugin(t)
	mustPluginWasm(t, dir, "relay", "relay.wasm", relayManifest("relay", "call", "memory", "remember", "memory"))
	th, _ := mustHostWith(t, dir, allowAgents)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := mustClient(ctx, t, th.URL, a2av1.TransportProtocolJSONRPC)
	run := func(skill string) map[string]any {
		t.Helper()
		req := message(skill, map[string]any{})
		req.Message.ContextID = "nested"
		res, err := cl.SendMessage(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", skill, err)
		}
		task, ok := res.(*a2av1.Task)
		if !ok || task.Status.State != a2av1.TaskStateCompleted || len(task.Artifacts) != 1 {
			t.Fatalf("%s = %+v", skill, res)
		}
		out, _ := task.Artifacts[0].Parts[0].Data().(map[string]any)
		return out
	}
	if out := run("call"); out["ok"] != true {
		t.Fatalf("the nested call failed: %v", out)
	}
	got, _ := run("recall")["result"].(map[string]any)
	if got["found"] != true || got["value"] != "remembered" {
		t.Errorf("recall in the same context after the nested remember = %v", got)
	}
}
