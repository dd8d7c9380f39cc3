package plan

import (
	"encoding/json"
	"unicode/utf8"
)

// meter counts the bytes of an encoding without producing it, and stops
// at max: every add reports whether the count still fits, and callers stop
// at the first false. A value is counted piece by piece, so counting costs
// at most about max steps, however large (or however often referenced) the
// values are: a client cannot make the count itself expensive.
type meter struct {
	n, max int
}

// add counts k more bytes and reports whether the count fits max.
func (m *meter) add(k int) bool {
	m.n += k
	return m.n <= m.max
}

// value counts v's compact JSON encoding (as encodeJSON writes it: no HTML
// escaping). embedded counts that encoding as the text of a JSON string
// instead, each of its bytes escaped once more: the size a value takes
// when a reference inside a longer string stands for it. v is decoded JSON
// (decodeNumbers): nil, bool, json.Number, string, []any, map[string]any.
func (m *meter) value(v any, embedded bool) bool {
	quote := 1
	if embedded {
		quote = 2 // \"
	}
	switch x := v.(type) {
	case nil:
		return m.add(4)
	case bool:
		if x {
			return m.add(4)
		}
		return m.add(5)
	case json.Number:
		return m.add(max(len(x), 1)) // "" encodes as 0
	case string:
		return m.add(2*quote) && m.text(x, embedded)
	case []any:
		if x == nil {
			return m.add(4)
		}
		if !m.add(2 + max(len(x)-1, 0)) { // [ ] and the commas
			return false
		}
		for _, e := range x {
			if !m.value(e, embedded) {
				return false
			}
		}
		return true
	case map[string]any:
		if x == nil {
			return m.add(4)
		}
		if !m.add(2 + max(len(x)-1, 0)) { // { } and the commas
			return false
		}
		for k, e := range x {
			if !m.add(2*quote+1) || !m.text(k, embedded) || !m.value(e, embedded) { // "k":
				return false
			}
		}
		return true
	}
	// Not decoded JSON: count its encoding (never reached for decodeNumbers'
	// values; kept so the meter is never short).
	b, err := encodeJSON(v)
	if err != nil {
		return m.add(m.max + 1)
	}
	if embedded {
		return m.text(string(b), true)
	}
	return m.add(len(b))
}

// text counts the contents of a JSON string holding s (without its
// quotes), as encoding/json escapes it; embedded counts s escaped twice (s
// is part of a value's JSON text that is itself a string's text).
func (m *meter) text(s string, embedded bool) bool {
	// Every byte costs at least one: refuse a string that cannot fit before
	// looking at its bytes, so the loop below runs over at most max bytes.
	if !m.add(len(s)) {
		return false
	}
	extra := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == '"' || c == '\\':
				extra += pick(embedded, 3, 1) // \" then \\\"
			case c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				extra += pick(embedded, 2, 1) // \n then \\n
			case c < 0x20:
				extra += pick(embedded, 6, 5) // \u001f then \\u001f
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			extra += pick(embedded, 6, 5) // \ufffd (6 bytes for 1) then \\ufffd
		case r == '\u2028' || r == '\u2029':
			extra += pick(embedded, 4, 3) // \u2028 (6 bytes for 3) then \\u2028
		}
	}
	return m.add(extra)
}

func pick(embedded bool, twice, once int) int {
	if embedded {
		return twice
	}
	return once
}
