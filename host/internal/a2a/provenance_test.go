package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// taskJSON polls GetTask until the task is terminal and returns its JSON.
func taskJSON(t *testing.T, url, id string) []byte {
	t.Helper()
	var res json.RawMessage
	var state string
	if !testutil.PollEvery(30*time.Second, 20*time.Millisecond, func() bool {
		var rerr *rpcError
		res, rerr = rpc(t, url, "GetTask", fmt.Sprintf(`{"id":%q}`, id), nil)
		if rerr != nil {
			t.Fatalf("GetTask: %+v", rerr)
		}
		var task struct {
			Status struct{ State string } `json:"status"`
		}
		_ = json.Unmarshal(res, &task)
		state = task.Status.State
		switch state {
		case "TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED":
			return true
		}
		return false
	}) {
		t.Fatalf("task %s still %s", id, state)
	}
	return res
}

func sendTask(t *testing.T, url, params string) string {
	t.Helper()
	res, rerr := rpc(t, url, "SendMessage", params, nil)
	if rerr != nil {
		t.Fatalf("SendMessage: %+v", rerr)
	}
	var out struct {
		Task struct{ ID string } `json:"task"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.Task.ID == "" {
		t.Fatalf("SendMessage result %s: %v", res, err)
	}
	return out.Task.ID
}

// linkSummary is "kind from>to" per link.
func linkSummary(t *testing.T, task []byte) []string {
	t.Helper()
	var doc struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(task, &doc); err != nil {
		t.Fatal(err)
	}
	var c provenance.Chain
	if err := json.Unmarshal(doc.Metadata[a2a.ExtProvenance], &c); err != nil {
		t.Fatalf("no chain in %s: %v", task, err)
	}
	var out []string
	for _, l := range c.Links {
		s := l.Kind
		if l.Kind == provenance.KindTransition {
			s += " " + strings.TrimPrefix(l.From, "TASK_STATE_") + ">" + strings.TrimPrefix(l.To, "TASK_STATE_")
			if l.Actor != "" {
				s += " by " + l.Actor
			}
			if l.Reason != "" {
				s += " (" + l.Reason + ")"
			}
		}
		out = append(out, s)
	}
	return out
}

// Every way a task runs and ends leaves a chain that verifies, with the
// transitions it went through.
func TestTaskProvenanceVerifies(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	h := startSigningHostOn(t, "testdata/plugins", store.Config{DataDir: t.TempDir()}, t.TempDir(), signer)
	immediately := func(p string) string {
		return strings.Replace(p, `"message":`, `"configuration":{"returnImmediately":true},"message":`, 1)
	}
	tests := []struct {
		name   string
		run    func(t *testing.T) string
		expect []string
	}{
		{"blocking, completed", func(t *testing.T) string { return sendTask(t, h.URL, sendParams("echo", `{"a":1}`)) },
			[]string{"transition >SUBMITTED by local:test", "transition SUBMITTED>WORKING", "artifact", "transition WORKING>COMPLETED"}},
		{"returnImmediately, completed", func(t *testing.T) string { return sendTask(t, h.URL, immediately(sendParams("echo", `{"a":2}`))) },
			[]string{"transition >SUBMITTED by local:test", "transition SUBMITTED>WORKING", "artifact", "transition WORKING>COMPLETED"}},
		{"blocking, failed", func(t *testing.T) string { return sendTask(t, h.URL, sendParams("crash", `{}`)) },
			[]string{"transition >SUBMITTED by local:test", "transition SUBMITTED>WORKING", "transition WORKING>FAILED (trap)"}},
		{"canceled by the client", func(t *testing.T) string {
			id := sendTask(t, h.URL, immediately(sendParams("spin", `{}`)))
			if _, rerr := rpc(t, h.URL, "CancelTask", fmt.Sprintf(`{"id":%q}`, id), nil); rerr != nil {
				t.Fatalf("CancelTask: %+v", rerr)
			}
			return id
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := tt.run(t)
			task := taskJSON(t, h.URL, id)
			got := linkSummary(t, task)
			if tt.expect != nil {
				if diff := cmp.Diff(tt.expect, got); diff != "" {
					t.Errorf("links (-want +got):\n%s", diff)
				}
			} else if last := got[len(got)-1]; !strings.HasPrefix(last, "transition ") || !strings.Contains(last, ">CANCELED by local") {
				t.Errorf("canceled task's last link %q (links %v)", last, got)
			}
			if rep := provenance.VerifyTask(task, signer.KeySet()); !rep.Valid {
				t.Fatalf("chain does not verify: %v", rep.Err())
			}
			res, rerr := rpc(t, h.URL, a2a.VerifyMethod, fmt.Sprintf(`{"id":%q}`, id), nil)
			if rerr != nil {
				t.Fatal(rerr)
			}
			var vr a2a.VerifyResult
			if err := json.Unmarshal(res, &vr); err != nil || !vr.Valid || vr.TaskID != id || len(vr.Signers) != 2 {
				t.Errorf("%s: %s (%v)", a2a.VerifyMethod, res, err)
			}
		})
	}
}

// Editing a stored task is detected, and the verification names the link.
func TestTaskProvenanceDetectsEdits(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	h := startSigningHostOn(t, "testdata/plugins", store.Config{DataDir: t.TempDir()}, t.TempDir(), signer)
	ctx := context.Background()
	kv, err := h.store.KeyValue(ctx, jetstream.KeyValueConfig{Bucket: a2a.TasksBucket})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		edit      func(task map[string]any, links []any)
		link      int
		field     string
		reasonHas string
	}{
		{"a transition's target state", func(_ map[string]any, l []any) { l[1].(map[string]any)["to"] = "TASK_STATE_INPUT_REQUIRED" }, 1, "signatures", "changed after it was signed"},
		{"a transition's time", func(_ map[string]any, l []any) { l[3].(map[string]any)["at"] = "2020-01-01T00:00:00Z" }, 3, "signatures", "changed after it was signed"},
		{"an earlier link, re-signed by nobody", func(_ map[string]any, l []any) { l[0].(map[string]any)["by"] = "mallory" }, 0, "signatures", "changed after it was signed"},
		{"a link removed", func(task map[string]any, l []any) { setLinks(task, append(l[:1:1], l[2:]...)) }, 1, "seq", "removed"},
		{"the artifact's content", func(task map[string]any, _ []any) {
			art := task["artifacts"].([]any)[0].(map[string]any)
			art["parts"] = []any{map[string]any{"data": map[string]any{"a": 666}}}
		}, 2, "artifact.sha256", "content was changed"},
		{"the task's state", func(task map[string]any, _ []any) {
			task["status"].(map[string]any)["state"] = "TASK_STATE_FAILED"
		}, 3, "to", "changed outside the chain"},
		{"the signatures swapped for another link's", func(_ map[string]any, l []any) {
			l[1].(map[string]any)["signatures"] = l[2].(map[string]any)["signatures"]
		}, 1, "signatures", "changed after it was signed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := sendTask(t, h.URL, sendParams("echo", `{"a":1}`))
			e, err := kv.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var rec map[string]any
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				t.Fatal(err)
			}
			task := rec["task"].(map[string]any)
			links := task["metadata"].(map[string]any)[a2a.ExtProvenance].(map[string]any)["links"].([]any)
			tt.edit(task, links)
			b, _ := json.Marshal(rec)
			if _, err := kv.Put(ctx, id, b); err != nil {
				t.Fatal(err)
			}
			res, rerr := rpc(t, h.URL, a2a.VerifyMethod, fmt.Sprintf(`{"id":%q}`, id), nil)
			if rerr != nil {
				t.Fatal(rerr)
			}
			var vr a2a.VerifyResult
			if err := json.Unmarshal(res, &vr); err != nil {
				t.Fatal(err)
			}
			if vr.Valid || vr.Failure == nil {
				t.Fatalf("the edit was not detected: %s", res)
			}
			f := vr.Failure
			if f.Link != tt.link || f.Field != tt.field || !strings.Contains(f.Reason, tt.reasonHas) {
				t.Errorf("failure %+v, want link %d field %s reason ~%q", *f, tt.link, tt.field, tt.reasonHas)
			}
		})
	}
}

func setLinks(task map[string]any, links []any) {
	task["metadata"].(map[string]any)[a2a.ExtProvenance].(map[string]any)["links"] = links
}
