package store_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/store"
)

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)

	created, err := st.CreateSession(ctx, store.Session{ID: "user:ada@example.com", AgentID: "planner", Context: json.RawMessage(`{"lang":"en"}`)})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	want := store.Session{ID: "user:ada@example.com", AgentID: "planner", Context: json.RawMessage(`{"lang":"en"}`), Status: store.StatusActive}
	ignoreTimes := cmpopts.IgnoreFields(store.Session{}, "CreatedAt", "ClosedAt")
	if diff := cmp.Diff(want, created, ignoreTimes); diff != "" {
		t.Errorf("created session (-want +got):\n%s", diff)
	}
	if time.Since(created.CreatedAt) > time.Minute || created.ClosedAt != nil {
		t.Errorf("created_at %v closed_at %v: want now and nil", created.CreatedAt, created.ClosedAt)
	}

	active, err := st.ActiveSession(ctx, created.ID)
	if err != nil {
		t.Fatalf("ActiveSession: %v", err)
	}
	if diff := cmp.Diff(created, active, cmpopts.EquateApproxTime(time.Millisecond)); diff != "" {
		t.Errorf("ActiveSession (-created +got):\n%s", diff)
	}

	closed, err := st.CloseSession(ctx, created.ID)
	if err != nil {
		t.Fatalf("CloseSession: %v", err)
	}
	if closed.Status != store.StatusClosed || closed.ClosedAt == nil {
		t.Errorf("closed session status %q closed_at %v", closed.Status, closed.ClosedAt)
	}
	got, err := st.Session(ctx, created.ID)
	if err != nil || got.Status != store.StatusClosed {
		t.Errorf("Session after close = %q, %v; want closed", got.Status, err)
	}

	closedFault := faultInfo{fault.SessionNotFound, fault.ReasonSessionClosed, created.ID}
	_, err = st.ActiveSession(ctx, created.ID)
	if diff := cmp.Diff(closedFault, faultOf(t, err)); diff != "" {
		t.Errorf("ActiveSession after close (-want +got):\n%s", diff)
	}
	_, err = st.CloseSession(ctx, created.ID)
	if diff := cmp.Diff(closedFault, faultOf(t, err)); diff != "" {
		t.Errorf("second close (-want +got):\n%s", diff)
	}
	_, err = st.SetContext(ctx, created.ID, "k", json.RawMessage(`1`), 0)
	if diff := cmp.Diff(closedFault, faultOf(t, err)); diff != "" {
		t.Errorf("SetContext on closed (-want +got):\n%s", diff)
	}
	_, err = st.GetContext(ctx, created.ID, "k")
	if diff := cmp.Diff(closedFault, faultOf(t, err)); diff != "" {
		t.Errorf("GetContext on closed (-want +got):\n%s", diff)
	}
}

func TestCreateSessionGeneratesID(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	idRE := regexp.MustCompile(`^sess_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 20 {
		sess := mustSession(t, st, "")
		if !idRE.MatchString(sess.ID) {
			t.Errorf("generated id %q does not match %v", sess.ID, idRE)
		}
		if seen[sess.ID] {
			t.Errorf("generated id %q twice", sess.ID)
		}
		seen[sess.ID] = true
	}
}

func TestCreateSessionRefusesReuse(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	mustSession(t, st, "dup")
	_, err := st.CreateSession(ctx, store.Session{ID: "dup"})
	if diff := cmp.Diff(faultInfo{fault.InvalidState, fault.ReasonSessionExists, "dup"}, faultOf(t, err)); diff != "" {
		t.Errorf("duplicate active id (-want +got):\n%s", diff)
	}
	if _, err := st.CloseSession(ctx, "dup"); err != nil {
		t.Fatalf("CloseSession: %v", err)
	}
	_, err = st.CreateSession(ctx, store.Session{ID: "dup"})
	if diff := cmp.Diff(faultInfo{fault.InvalidState, fault.ReasonSessionClosed, "dup"}, faultOf(t, err)); diff != "" {
		t.Errorf("reuse of a closed id (-want +got):\n%s", diff)
	}
}

func TestMissingSession(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	want := faultInfo{fault.SessionNotFound, fault.ReasonSessionNotFound, "nope"}
	calls := map[string]func() error{
		"Session":       func() error { _, err := st.Session(ctx, "nope"); return err },
		"ActiveSession": func() error { _, err := st.ActiveSession(ctx, "nope"); return err },
		"CloseSession":  func() error { _, err := st.CloseSession(ctx, "nope"); return err },
		"SetContext":    func() error { _, err := st.SetContext(ctx, "nope", "k", json.RawMessage(`1`), 0); return err },
		"GetContext":    func() error { _, err := st.GetContext(ctx, "nope", "k"); return err },
	}
	for name, call := range calls {
		if diff := cmp.Diff(want, faultOf(t, call())); diff != "" {
			t.Errorf("%s on a missing session (-want +got):\n%s", name, diff)
		}
	}
}

func TestConcurrentCloseOneWins(t *testing.T) {
	t.Parallel()
	st := mustOpen(t, store.Config{})
	ctx := testCtx(t)
	const closers = 8
	for round := range 3 {
		id := mustSession(t, st, "race-"+strings.Repeat("x", round+1)).ID
		var wg sync.WaitGroup
		errs := make([]error, closers)
		for i := range closers {
			wg.Go(func() { _, errs[i] = st.CloseSession(ctx, id) })
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			if err == nil {
				wins++
				continue
			}
			if diff := cmp.Diff(faultInfo{fault.SessionNotFound, fault.ReasonSessionClosed, id}, faultOf(t, err)); diff != "" {
				t.Errorf("losing close (-want +got):\n%s", diff)
			}
		}
		if wins != 1 {
			t.Errorf("round %d: %d closes succeeded, want exactly 1", round, wins)
		}
	}
}
