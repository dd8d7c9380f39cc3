package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/sdktest"
)

// newHost is a fake host whose session context starts empty, with a clock
// the test moves.
func newHost(now *time.Time) *sdktest.Host {
	h := sdktest.New()
	h.Now = func() time.Time { return *now }
	return h
}

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)

func mustAdd(t *testing.T, s store, text string) AddOut {
	t.Helper()
	out, err := add(s, t0, AddIn{Text: text})
	if err != nil {
		t.Fatalf("add %q: %v", text, err)
	}
	return out
}

func TestNotesLifecycle(t *testing.T) {
	t.Parallel()
	now := t0
	h := newHost(&now)
	s := h.Context()
	empty, err := list(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ListOut{Notes: []Note{}}, empty); diff != "" {
		t.Errorf("empty list (-want +got):\n%s", diff)
	}
	first := mustAdd(t, s, "  first  ")
	mustAdd(t, s, "second")
	want := ListOut{Count: 2, Notes: []Note{
		{ID: 1, Text: "first", AddedAt: t0.Truncate(time.Second)},
		{ID: 2, Text: "second", AddedAt: t0.Truncate(time.Second)},
	}}
	if diff := cmp.Diff(AddOut{Note: want.Notes[0], Count: 1}, first); diff != "" {
		t.Errorf("add (-want +got):\n%s", diff)
	}
	got, err := list(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	var stored book
	if found, err := h.Value(storeKey, &stored); !found || err != nil || len(stored.Notes) != 2 {
		t.Errorf("session context holds %+v (found %v, %v), want the two notes", stored, found, err)
	}
	cleared, err := clearNotes(s)
	if err != nil || cleared.Cleared != 2 {
		t.Fatalf("clear = %+v, %v; want 2 cleared", cleared, err)
	}
	// Ids are not reused after a clear.
	if again := mustAdd(t, s, "third"); again.Note.ID != 3 || again.Count != 1 {
		t.Errorf("after clear: %+v, want id 3 count 1", again)
	}
	// The notes expire storeTTL after the last change.
	now = now.Add(storeTTL)
	if l, err := list(s); err != nil || l.Count != 0 {
		t.Errorf("after the ttl: %+v, %v; want no notes", l, err)
	}
}

func TestNotesCaps(t *testing.T) {
	t.Parallel()
	now := t0
	s := newHost(&now).Context()
	for i := range maxNotes {
		mustAdd(t, s, strings.Repeat("x", i+1))
	}
	tests := []struct {
		name, text, code string
	}{
		{"full", "one more", "notes_full"},
		{"empty", "   ", sdk.CodeInvalidInput},
		{"too long", strings.Repeat("y", maxNoteBytes+1), sdk.CodeInvalidInput},
		{"invalid utf8", "\xff", sdk.CodeInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := add(s, t0, AddIn{Text: tt.text})
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != tt.code {
				t.Fatalf("error = %v, want code %s", err, tt.code)
			}
		})
	}
	if l, _ := list(s); l.Count != maxNotes {
		t.Errorf("count = %d after refused adds, want %d", l.Count, maxNotes)
	}
}

// TestNotesPassHostErrors: a call without a session gets the host's
// no_session error back unchanged.
func TestNotesPassHostErrors(t *testing.T) {
	t.Parallel()
	h := sdktest.New()
	h.NoSession = true
	for name, run := range map[string]func() error{
		"add":   func() error { _, err := add(h.Context(), t0, AddIn{Text: "x"}); return err },
		"list":  func() error { _, err := list(h.Context()); return err },
		"clear": func() error { _, err := clearNotes(h.Context()); return err },
	} {
		var se *sdk.Error
		if err := run(); !errors.As(err, &se) || se.Code != sdk.CodeNoSession {
			t.Errorf("%s: error = %v, want the host's %s", name, err, sdk.CodeNoSession)
		}
	}
}
