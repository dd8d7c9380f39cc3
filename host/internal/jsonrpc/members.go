package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// objectMembers calls f for each member of the JSON object raw, in order,
// until f fails: its name decoded as encoding/json decodes member names
// (memberName) and its value's bytes. It is one pass over bytes already
// known to be valid JSON (the engine's strict read of the body checks it
// before anything reads it), without allocating per member; on anything else
// it stops early instead of failing, as json.Unmarshal would report it. It
// replaces decoding into a map or through json.Decoder's tokens, which cost
// a tenth of a small call's CPU.
func objectMembers(raw []byte, f func(name string, val json.RawMessage) error) error {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	i++
	for {
		i = skipSpace(raw, i)
		if i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
		if i >= len(raw) || raw[i] != '"' {
			return nil // '}' or malformed
		}
		end := stringEnd(raw, i)
		name, err := memberName(raw[i:end])
		if err != nil {
			return nil
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return nil
		}
		i = skipSpace(raw, i+1)
		vend := valueEnd(raw, i)
		if vend <= i {
			return nil
		}
		if err := f(name, raw[i:vend:vend]); err != nil {
			return err
		}
		i = vend
	}
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return i
}

// valueEnd returns the index just past the JSON value starting at raw[i].
func valueEnd(raw []byte, i int) int {
	if i >= len(raw) {
		return i
	}
	switch raw[i] {
	case '"':
		return stringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				j = stringEnd(raw, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(raw)
	}
	j := i // number, true, false, null
	for j < len(raw) && bytes.IndexByte([]byte(",}] \t\r\n"), raw[j]) < 0 {
		j++
	}
	return j
}

// stringValue decodes a JSON string literal, taking the fast path when it
// has no escape (and is valid UTF-8, which encoding/json would otherwise
// rewrite). ok is false when raw is not a string.
func stringValue(raw []byte) (s string, ok bool) {
	raw = trimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if name, err := memberName(raw); err == nil {
		return name, true
	}
	return "", false
}

// stringEnd returns the index just past the string literal starting at
// raw[start] (a '"').
func stringEnd(raw []byte, start int) int {
	for j := start + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(raw)
}

func utf8Valid(b []byte) bool { return utf8.Valid(b) }

// memberName decodes a member name literal as encoding/json does (escapes
// resolved, invalid UTF-8 replaced by U+FFFD, so "\x84" and "\x88" are the
// same name), taking the fast path when the literal needs neither.
func memberName(lit []byte) (string, error) {
	if len(lit) >= 2 && bytes.IndexByte(lit, '\\') < 0 && utf8.Valid(lit) {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return "", fmt.Errorf("malformed member name: %w", err)
	}
	return s, nil
}
