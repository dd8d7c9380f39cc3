package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/skillhost/skillhost/sdk"
)

// jsonStore keeps values as JSON bytes, as the host's session context does,
// so the round trip through encoding is exercised.
type jsonStore struct {
	m    map[string][]byte
	ttls map[string]time.Duration
}

func newStore() *jsonStore {
	return &jsonStore{m: map[string][]byte{}, ttls: map[string]time.Duration{}}
}

func (s *jsonStore) Get(key string, v any) (bool, error) {
	raw, ok := s.m[key]
	if !ok {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

func (s *jsonStore) Set(key string, v any, ttl time.Duration) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.m[key], s.ttls[key] = raw, ttl
	return nil
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
	s := newStore()
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
	if s.ttls[storeKey] != storeTTL {
		t.Errorf("ttl = %v, want %v", s.ttls[storeKey], storeTTL)
	}
	cleared, err := clearNotes(s)
	if err != nil || cleared.Cleared != 2 {
		t.Fatalf("clear = %+v, %v; want 2 cleared", cleared, err)
	}
	// Ids are not reused after a clear.
	if again := mustAdd(t, s, "third"); again.Note.ID != 3 || again.Count != 1 {
		t.Errorf("after clear: %+v, want id 3 count 1", again)
	}
}

func TestNotesCaps(t *testing.T) {
	t.Parallel()
	s := newStore()
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

// failingStore reports a host failure (e.g. no session) on every call.
type failingStore struct{}

func (failingStore) Get(string, any) (bool, error) {
	return false, &sdk.Error{Code: "session_not_found", Message: "no session"}
}
func (failingStore) Set(string, any, time.Duration) error {
	return &sdk.Error{Code: "session_not_found", Message: "no session"}
}

func TestNotesPassHostErrors(t *testing.T) {
	t.Parallel()
	_, err := add(failingStore{}, t0, AddIn{Text: "x"})
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != "session_not_found" {
		t.Fatalf("error = %v, want the host's session_not_found", err)
	}
}
