package main

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
)

// Note is one stored note.
type Note struct {
	ID      int       `json:"id"`
	Text    string    `json:"text"`
	AddedAt time.Time `json:"added_at"`
}

// AddIn is the input of note_add.
type AddIn struct {
	Text string `json:"text"`
}

// AddOut is the output of note_add.
type AddOut struct {
	Note  Note `json:"note"`
	Count int  `json:"count"`
}

// ListOut is the output of note_list.
type ListOut struct {
	Notes []Note `json:"notes"`
	Count int    `json:"count"`
}

// ClearOut is the output of note_clear.
type ClearOut struct {
	Cleared int `json:"cleared"`
}

// Caps and storage.
const (
	maxNotes     = 100
	maxNoteBytes = 4096
	storeKey     = "notes.v1"
	storeTTL     = 24 * time.Hour
)

// store is the session context: *sdk.Context.
type store interface {
	Get(key string, v any) (bool, error)
	Set(key string, v any, ttl time.Duration) error
}

// book is the stored value.
type book struct {
	NextID int    `json:"next_id"`
	Notes  []Note `json:"notes"`
}

func load(s store) (book, error) {
	var b book
	if _, err := s.Get(storeKey, &b); err != nil {
		return book{}, err
	}
	if b.NextID == 0 {
		b.NextID = 1
	}
	return b, nil
}

func add(s store, now time.Time, in AddIn) (AddOut, error) {
	text := strings.TrimSpace(in.Text)
	switch {
	case text == "":
		return AddOut{}, sdk.InvalidInput("text is empty").WithData(map[string]any{"field": "text"})
	case len(text) > maxNoteBytes:
		return AddOut{}, sdk.InvalidInput("text is %d bytes; the limit is %d", len(text), maxNoteBytes).
			WithData(map[string]any{"field": "text"})
	case !utf8.ValidString(text):
		return AddOut{}, sdk.InvalidInput("text is not valid UTF-8").WithData(map[string]any{"field": "text"})
	}
	b, err := load(s)
	if err != nil {
		return AddOut{}, err
	}
	if len(b.Notes) >= maxNotes {
		return AddOut{}, sdk.Errorf("notes_full", "this session already has %d notes (the limit); clear them first", maxNotes)
	}
	n := Note{ID: b.NextID, Text: text, AddedAt: now.UTC().Truncate(time.Second)}
	b.NextID++
	b.Notes = append(b.Notes, n)
	if err := s.Set(storeKey, b, storeTTL); err != nil {
		return AddOut{}, err
	}
	return AddOut{Note: n, Count: len(b.Notes)}, nil
}

func list(s store) (ListOut, error) {
	b, err := load(s)
	if err != nil {
		return ListOut{}, err
	}
	if b.Notes == nil {
		b.Notes = []Note{}
	}
	return ListOut{Notes: b.Notes, Count: len(b.Notes)}, nil
}

func clearNotes(s store) (ClearOut, error) {
	b, err := load(s)
	if err != nil {
		return ClearOut{}, err
	}
	if len(b.Notes) == 0 {
		return ClearOut{}, nil
	}
	// Keep NextID so ids are never reused within the session.
	if err := s.Set(storeKey, book{NextID: b.NextID, Notes: []Note{}}, storeTTL); err != nil {
		return ClearOut{}, err
	}
	return ClearOut{Cleared: len(b.Notes)}, nil
}
