// Command notes is the skillhost "notes" plugin: note_add, note_list and
// note_clear keep a list of notes in the calling session's context (the
// host's context_get/context_set host functions), so every session has its
// own notes and they expire with the context entry (24 hours after the last
// change).
//
// Two concurrent note_add calls in the same session may race (read, append,
// write); the last write wins.
package main
