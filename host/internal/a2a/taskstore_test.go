package a2a_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/store"
)

func mustTaskStore(t *testing.T, cfg a2a.TaskStoreConfig) *a2a.TaskStore {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{DataDir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	ts, err := a2a.OpenTaskStore(context.Background(), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func newRecord(id string) *a2a.Record {
	return &a2a.Record{Task: &a2av1.Task{ID: a2av1.TaskID(id), ContextID: "c", Status: a2av1.TaskStatus{State: a2av1.TaskStateSubmitted}}}
}

// TestConcurrentUpdatesNeverLoseATransition: 20 writers append to one task at
// once; the revision check makes every append land, and once the task is
// terminal nothing changes it again.
func TestConcurrentUpdatesNeverLoseATransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := mustTaskStore(t, a2a.TaskStoreConfig{})
	if err := ts.Create(ctx, newRecord("t1")); err != nil {
		t.Fatal(err)
	}
	if err := ts.Create(ctx, newRecord("t1")); !errors.Is(err, fault.ErrInvalidState) {
		t.Errorf("duplicate create: %v", err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := ts.Update(ctx, "t1", a2a.StateWorking, func(r *a2a.Record) error {
				r.Task.Artifacts = append(r.Task.Artifacts, &a2av1.Artifact{ID: a2av1.ArtifactID(fmt.Sprint(i))})
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rec, err := ts.Get(ctx, "t1")
	if err != nil || len(rec.Task.Artifacts) != 20 {
		t.Fatalf("after 20 concurrent updates: %d artifacts, %v", len(rec.Task.Artifacts), err)
	}
	if _, err := ts.Update(ctx, "t1", a2a.StateCompleted, func(*a2a.Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Update(ctx, "t1", a2a.StateCanceled, func(*a2a.Record) error { return nil }); !errors.Is(err, &fault.Error{Kind: fault.TaskNotCancelable}) {
		t.Errorf("cancel of a completed task: %v, want TaskNotCancelable", err)
	}
	if _, err := ts.Update(ctx, "t1", a2a.StateWorking, func(*a2a.Record) error { return nil }); !errors.Is(err, fault.ErrInvalidState) {
		t.Errorf("completed -> working: %v, want InvalidState", err)
	}
	if rec, _ := ts.Get(ctx, "t1"); rec.State() != a2a.StateCompleted {
		t.Errorf("terminal task changed to %s", rec.State())
	}
}

func TestTaskSizeCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ts := mustTaskStore(t, a2a.TaskStoreConfig{MaxTaskSize: 4096})
	if err := ts.Create(ctx, newRecord("big")); err != nil {
		t.Fatal(err)
	}
	_, err := ts.Update(ctx, "big", a2a.StateCompleted, func(r *a2a.Record) error {
		r.Task.Artifacts = []*a2av1.Artifact{{ID: "a", Parts: a2av1.ContentParts{a2av1.NewTextPart(string(make([]byte, 8192)))}}}
		return nil
	})
	if !errors.Is(err, fault.New(fault.ResourceExhausted, fault.ReasonOutputLimit, "")) {
		t.Errorf("oversized task: %v, want output_limit", err)
	}
}
