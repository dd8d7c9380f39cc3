package a2a_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/store"
)

// keyPrincipals are the principals of API keys with the given ids.
func keyPrincipals(t *testing.T, ids ...string) map[string]auth.Principal {
	t.Helper()
	var specs []auth.KeySpec
	for _, id := range ids {
		sum := sha256.Sum256([]byte("sk_" + id))
		specs = append(specs, auth.KeySpec{ID: id, SHA256: hex.EncodeToString(sum[:]), Scopes: []string{"*"}})
	}
	keys, err := auth.NewKeySet(specs, auth.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]auth.Principal{}
	for _, id := range ids {
		p, ok := keys.Principal(id)
		if !ok {
			t.Fatalf("no principal %s", id)
		}
		out[id] = p
	}
	return out
}

// quotaStore opens a task store on dir (an embedded NATS server there).
func quotaStore(t *testing.T, dir string, cfg a2a.TaskStoreConfig) (*store.Store, *a2a.TaskStore) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: dir, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ts, err := a2a.OpenTaskStore(ctx, st, cfg)
	if err != nil {
		_ = st.Close()
		t.Fatal(err)
	}
	return st, ts
}

// taskOf is a new submitted task of who whose message carries text.
func taskOf(who auth.Principal, text string) *a2a.Record {
	msg := a2av1.NewMessage(a2av1.MessageRoleUser, a2av1.NewTextPart(text))
	return &a2a.Record{Owner: who.Owner(), Task: &a2av1.Task{ID: a2av1.NewTaskID(), ContextID: "c", History: []*a2av1.Message{msg},
		Status: a2av1.TaskStatus{State: a2av1.TaskStateSubmitted}}}
}

// reasonOf is the kind and reason of err ("" when nil or not a fault).
func reasonOf(err error) string {
	var fe *fault.Error
	if !errors.As(err, &fe) {
		if err != nil {
			return "not a fault: " + err.Error()
		}
		return ""
	}
	return fe.Kind.String() + " " + fe.Reason
}

// complete moves a task through working to completed, with an artifact of
// n bytes of text.
func complete(ctx context.Context, ts *a2a.TaskStore, id a2av1.TaskID, n int) error {
	if _, err := ts.Update(ctx, id, a2a.StateWorking, func(*a2a.Record) error { return nil }); err != nil {
		return err
	}
	_, err := ts.Update(ctx, id, a2a.StateCompleted, func(r *a2a.Record) error {
		r.Task.Artifacts = append(r.Task.Artifacts, &a2av1.Artifact{ID: "out", Parts: a2av1.ContentParts{a2av1.NewTextPart(strings.Repeat("o", n))}})
		return nil
	})
	return err
}

// One key driven to its stored-task quota is refused with key_quota naming
// it, while another key keeps creating tasks; the count holds after the
// tasks end and after a restart (the accounting is stored, not in memory).
func TestTaskQuotaIsPerKey(t *testing.T) {
	t.Parallel()
	keys := keyPrincipals(t, "alice", "bob")
	alice, bob := auth.With(t.Context(), keys["alice"]), auth.With(t.Context(), keys["bob"])
	dir := t.TempDir()
	cfg := a2a.TaskStoreConfig{A2A: a2aSection(func(c *config.A2A) { c.MaxBucket, c.MaxTasksPerKey = 64<<20, 3 })}
	st, ts := quotaStore(t, dir, cfg)
	for i := range 3 {
		rec := taskOf(keys["alice"], "hello")
		if err := ts.Create(alice, rec); err != nil {
			t.Fatalf("alice's task %d: %v", i, err)
		}
		if err := complete(alice, ts, rec.Task.ID, 100); err != nil {
			t.Fatalf("completing alice's task %d: %v", i, err)
		}
	}
	refused := func(step string) {
		t.Helper()
		err := ts.Create(alice, taskOf(keys["alice"], "one more"))
		if got := reasonOf(err); got != "ResourceExhausted key_quota" {
			t.Fatalf("%s: alice's 4th task: %s, want ResourceExhausted key_quota", step, got)
		}
		var fe *fault.Error
		if errors.As(err, &fe) && (fe.Data["limit"] != "a2a.max_tasks_per_key" || !strings.Contains(fe.Msg, "a2a.max_tasks_per_key")) {
			t.Errorf("%s: the refusal does not name a2a.max_tasks_per_key: %s %v", step, fe.Msg, fe.Data)
		}
		if err := ts.Create(bob, taskOf(keys["bob"], "hello")); err != nil {
			t.Errorf("%s: bob refused while alice is at her quota: %v", step, err)
		}
	}
	refused("running")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, ts = quotaStore(t, dir, cfg)
	t.Cleanup(func() { _ = st.Close() })
	refused("after a restart")
	u, err := ts.Usage(t.Context(), keys["alice"].Owner())
	if err != nil {
		t.Fatal(err)
	}
	if u.Records != 3 || u.Bytes <= 0 || u.Bytes > 3*8<<10 {
		t.Errorf("alice's usage %+v: want 3 records of their (small) completed size", u)
	}
}

// A running task counts at the largest record it may grow to, an ended
// one at its size: a key's byte quota caps how much its running tasks can
// still write, and frees up as they end.
func TestTaskByteQuotaCountsRunningTasksAtTheirBound(t *testing.T) {
	t.Parallel()
	keys := keyPrincipals(t, "alice")
	alice := auth.With(t.Context(), keys["alice"])
	st, ts := quotaStore(t, t.TempDir(), a2a.TaskStoreConfig{A2A: a2aSection(func(c *config.A2A) { c.MaxBucket, c.MaxTaskBytesPerKey = 64<<20, 5<<20 })})
	t.Cleanup(func() { _ = st.Close() })
	// The embedded server's max_payload caps a task record near 1 MiB.
	var running []a2av1.TaskID
	var err error
	for err == nil {
		rec := taskOf(keys["alice"], "hello")
		if err = ts.Create(alice, rec); err == nil {
			running = append(running, rec.Task.ID)
		}
		if len(running) > 5 {
			t.Fatalf("%d running tasks of about 1 MiB each admitted under a 5 MiB quota", len(running))
		}
	}
	if got := reasonOf(err); got != "ResourceExhausted key_quota" || !strings.Contains(err.Error(), "a2a.max_task_bytes_per_key") {
		t.Fatalf("over the byte quota: %v (%s)", err, got)
	}
	if len(running) < 3 {
		t.Fatalf("only %d running tasks admitted under a 5 MiB quota", len(running))
	}
	if err := complete(alice, ts, running[0], 10); err != nil {
		t.Fatal(err)
	}
	if err := ts.Create(alice, taskOf(keys["alice"], "again")); err != nil {
		t.Errorf("a task ended, but no new one is admitted: %v", err)
	}
}

// A bucket filled up to its admission limit refuses new tasks of every
// principal with storage_full (-32106, never -32603), and the running
// tasks still store their completions in the reserve; once even the
// reserve is used up, a write is storage_full as well.
func TestTaskReserveKeepsRoomForRunningTasks(t *testing.T) {
	t.Parallel()
	keys := keyPrincipals(t, "alice", "bob")
	bob := auth.With(t.Context(), keys["bob"])
	local := auth.With(t.Context(), auth.Local("stdio"))
	st, ts := quotaStore(t, t.TempDir(), a2a.TaskStoreConfig{A2A: a2aSection(func(c *config.A2A) { c.MaxBucket, c.MaxTaskBytesPerKey, c.Reserve = 12<<20, 8<<20, 2<<20 })})
	t.Cleanup(func() { _ = st.Close() })
	var running []a2av1.TaskID
	for range 5 {
		rec := taskOf(keys["bob"], "long job")
		if err := ts.Create(bob, rec); err != nil {
			t.Fatal(err)
		}
		running = append(running, rec.Task.ID)
	}
	// Fill with the tasks of an uncapped principal until admission stops.
	var err error
	for i := 0; err == nil; i++ {
		if i > 24 {
			t.Fatal("the bucket never stopped admitting tasks")
		}
		err = ts.Create(local, taskOf(auth.Local("stdio"), strings.Repeat("x", 600<<10)))
	}
	if got := reasonOf(err); got != "ResourceExhausted storage_full" || !strings.Contains(err.Error(), "a2a.reserve") {
		t.Fatalf("bucket at its admission limit: %v (%s), want storage_full naming a2a.reserve", err, got)
	}
	if got := reasonOf(ts.Create(bob, taskOf(keys["bob"], "hi"))); got != "ResourceExhausted storage_full" {
		t.Errorf("a capped key's new task: %s, want storage_full", got)
	}
	first := running[0]
	if err := complete(bob, ts, first, 900<<10); err != nil {
		t.Fatalf("a running task's completion was refused: %v", err)
	}
	rec, err := ts.Get(t.Context(), first)
	if err != nil || rec.State() != a2a.StateCompleted || len(rec.Task.Artifacts) != 1 {
		t.Fatalf("the completed task reads back as %v, %v", rec, err)
	}
	// Keep completing big outputs: once the reserve is gone too, the write
	// is refused as storage_full, not as an internal error.
	var last error
	for _, id := range running[1:] {
		if last = complete(bob, ts, id, 900<<10); last != nil {
			break
		}
	}
	if got := reasonOf(last); got != "ResourceExhausted storage_full" {
		t.Errorf("a write to the full bucket: %v (%s), want storage_full", last, got)
	}
	if diff := cmp.Diff(int64(5), mustUsage(t, ts, keys["bob"]).Records); diff != "" {
		t.Errorf("bob's records (-want +got):\n%s", diff)
	}
}

func mustUsage(t *testing.T, ts *a2a.TaskStore, who auth.Principal) store.OwnerUsage {
	t.Helper()
	u, err := ts.Usage(t.Context(), who.Owner())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A blocking SendMessage's task is admitted before it runs and stored once
// when it ends; when its end races a CancelTask (each side creating the
// final record from its own copy, the canceller's read from the live
// record), the key is charged for exactly one task, at its final size.
func TestBlockingTaskIsChargedOnce(t *testing.T) {
	t.Parallel()
	keys := keyPrincipals(t, "alice")
	alice := auth.With(t.Context(), keys["alice"])
	st, ts := quotaStore(t, t.TempDir(), a2a.TaskStoreConfig{A2A: a2aSection(func(c *config.A2A) { c.MaxBucket = 64 << 20 })})
	t.Cleanup(func() { _ = st.Close() })
	for i := range 4 {
		rec := taskOf(keys["alice"], "hello")
		rec.Task.Status.State = a2av1.TaskStateWorking
		if err := ts.AdmitLive(alice, rec); err != nil {
			t.Fatal(err)
		}
		live, err := json.Marshal(rec) // what the canceller reads from the live bucket
		if err != nil {
			t.Fatal(err)
		}
		var canceled a2a.Record
		if err := json.Unmarshal(live, &canceled); err != nil {
			t.Fatal(err)
		}
		rec.Task.Status.State = a2av1.TaskStateCompleted
		rec.Task.Artifacts = []*a2av1.Artifact{{ID: "out", Parts: a2av1.ContentParts{a2av1.NewTextPart(strings.Repeat("o", 2000))}}}
		canceled.Task.Status.State = a2av1.TaskStateCanceled
		var wg sync.WaitGroup
		var wins atomic.Int32
		for _, r := range []*a2a.Record{rec, &canceled} {
			wg.Go(func() {
				_, won, err := ts.CreateFinal(alice, r)
				if err != nil {
					t.Error(err)
				}
				if won {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d sides won", i, wins.Load())
		}
		u := mustUsage(t, ts, keys["alice"])
		if u.Records != int64(i+1) || u.Bytes > int64(i+1)*8<<10 {
			t.Fatalf("round %d: usage %+v, want %d records of their final size", i, u, i+1)
		}
	}
}
