package store

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/skillhost/skillhost/host/fault"
)

// NATS KV keys allow only [-/_=.a-zA-Z0-9]; session ids and context keys are
// base64url-encoded (no padding) so any accepted string is a safe key token.
var enc = base64.RawURLEncoding

// sessionKey is the sessions-bucket key of a session.
func sessionKey(id string) string { return enc.EncodeToString([]byte(id)) }

// contextPrefix is the context-bucket key prefix of a session's values:
// keys are "<session>.<key>", so one session's keys never collide with or
// match another's.
func contextPrefix(id string) string { return sessionKey(id) + "." }

// contextKey is the context-bucket key of one value.
func contextKey(id, key string) string { return contextPrefix(id) + enc.EncodeToString([]byte(key)) }

// validSessionIDByte reports whether c may appear in a session id.
func validSessionIDByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_.:@-", c) >= 0
}

// checkSessionID returns an InvalidParams fault unless id is 1..128 bytes of
// [A-Za-z0-9_.:@-].
func checkSessionID(id string) *fault.Error {
	if id == "" || len(id) > MaxSessionIDLen {
		return invalid(id, "session_id", "must be 1..128 characters")
	}
	for i := range len(id) {
		if !validSessionIDByte(id[i]) {
			return invalid(id, "session_id", "may contain only A-Z a-z 0-9 _ . : @ -")
		}
	}
	return nil
}

// checkContextKey returns an InvalidParams fault unless key is 1..256 bytes
// of valid UTF-8.
func checkContextKey(sessionID, key string) *fault.Error {
	if key == "" || len(key) > MaxContextKeyBytes {
		return invalid(sessionID, "context_key", "must be 1..256 bytes")
	}
	if !utf8.ValidString(key) {
		return invalid(sessionID, "context_key", "must be valid UTF-8")
	}
	return nil
}

// invalid is the InvalidParams fault for a bad field.
func invalid(sessionID, field, msg string) *fault.Error {
	return withSession(fault.New(fault.InvalidParams, fault.ReasonInvalidParams, field+": "+msg).
		With("field", field), sessionID)
}

// withSession adds session_id to a fault's data. An id too long to be valid
// is truncated so a hostile id is not echoed back in full.
func withSession(e *fault.Error, id string) *fault.Error {
	if len(id) > MaxSessionIDLen {
		id = strings.ToValidUTF8(id[:MaxSessionIDLen], "") + "…"
	}
	return e.With("session_id", id)
}

// compactJSON validates raw as JSON and returns it without insignificant
// whitespace, the form it is stored and returned in.
func compactJSON(raw []byte) ([]byte, bool) {
	var buf bytes.Buffer
	if len(raw) == 0 || json.Compact(&buf, raw) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// marshal encodes a record without HTML escaping, so stored values come
// back byte for byte as they were set (after compaction).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
