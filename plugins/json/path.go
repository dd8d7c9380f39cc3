package main

import (
	"strconv"
	"strings"

	"github.com/skillhost/skillhost/sdk"
)

// maxPathLen caps the length of a query path; maxSegments caps its depth.
const (
	maxPathLen  = 4096
	maxSegments = 256
)

// segment is one step of a path: a key (object member) or an index (array
// element; negative counts from the end).
type segment struct {
	key     string
	index   int
	isIndex bool
}

// parsePath parses a path such as `a.b[0].c`, `$.items[-1]` or
// `["key.with.dots"][2]`. An empty path (or "$") selects the whole document.
func parsePath(p string) ([]segment, error) {
	if len(p) > maxPathLen {
		return nil, sdk.InvalidInput("path is %d bytes; the limit is %d", len(p), maxPathLen)
	}
	p = strings.TrimPrefix(p, "$")
	var segs []segment
	bad := func(format string, args ...any) error {
		return sdk.InvalidInput("path %q: "+format, append([]any{p}, args...)...).WithData(map[string]any{"field": "path"})
	}
	afterDot := true // a bare key may start here (path start or after '.')
	for i := 0; i < len(p); {
		if len(segs) >= maxSegments {
			return nil, bad("more than %d segments", maxSegments)
		}
		switch p[i] {
		case '[':
			seg, n, err := parseBracket(p[i:])
			if err != nil {
				return nil, bad("%s at offset %d", err.Error(), i)
			}
			segs = append(segs, seg)
			i += n
			afterDot = false
		case '.':
			if i+1 == len(p) || p[i+1] == '.' {
				return nil, bad("empty key at offset %d", i+1)
			}
			i++
			afterDot = true
		default:
			if !afterDot {
				return nil, bad("expected '.' or '[' at offset %d", i)
			}
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			segs = append(segs, segment{key: p[i:j]})
			i = j
			afterDot = false
		}
	}
	return segs, nil
}

// parseBracket parses `[12]`, `[-1]`, `["key"]` or `['key']` at the start of s
// and returns the segment and the bytes consumed.
func parseBracket(s string) (segment, int, error) {
	if len(s) < 3 {
		return segment{}, 0, errText("unterminated '['")
	}
	if q := s[1]; q == '"' || q == '\'' {
		var b strings.Builder
		for i := 2; i < len(s); i++ {
			switch c := s[i]; {
			case c == '\\' && i+1 < len(s):
				i++
				b.WriteByte(s[i])
			case c == q:
				if i+1 >= len(s) || s[i+1] != ']' {
					return segment{}, 0, errText("expected ']' after quoted key")
				}
				return segment{key: b.String()}, i + 2, nil
			default:
				b.WriteByte(c)
			}
		}
		return segment{}, 0, errText("unterminated quoted key")
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return segment{}, 0, errText("unterminated '['")
	}
	n, err := strconv.Atoi(s[1:end])
	if err != nil {
		return segment{}, 0, errText("index " + strconv.Quote(s[1:end]) + " is not an integer")
	}
	return segment{index: n, isIndex: true}, end + 1, nil
}

type errText string

func (e errText) Error() string { return string(e) }

// lookup walks doc (decoded with UseNumber) along segs. found is false when a
// key or index does not exist or a step meets a scalar.
func lookup(doc any, segs []segment) (value any, found bool) {
	cur := doc
	for _, s := range segs {
		switch v := cur.(type) {
		case map[string]any:
			if s.isIndex {
				// An object key that looks like a number: a[0] on {"0": …}.
				s.key = strconv.Itoa(s.index)
			}
			next, ok := v[s.key]
			if !ok {
				return nil, false
			}
			cur = next
		case []any:
			idx := s.index
			if !s.isIndex {
				n, err := strconv.Atoi(s.key)
				if err != nil {
					return nil, false
				}
				idx = n
			}
			if idx < 0 {
				idx += len(v)
			}
			if idx < 0 || idx >= len(v) {
				return nil, false
			}
			cur = v[idx]
		default:
			return nil, false
		}
	}
	return cur, true
}
