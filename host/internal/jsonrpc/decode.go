package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/skillhost/skillhost/host/fault"
)

// jsonSpace is the whitespace JSON allows between tokens.
const jsonSpace = " \t\r\n"

// splitBatch returns the raw elements of a batch body (already known to be
// valid JSON starting with '['), refusing more than max elements without
// decoding the rest.
func splitBatch(body []byte, max int) ([]json.RawMessage, *fault.Error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // '['
		return nil, fault.Wrap(fault.Parse, fault.ReasonParse, err, "body is not valid JSON")
	}
	var elems []json.RawMessage
	for dec.More() {
		if len(elems) == max {
			return nil, fault.Newf(fault.InvalidRequest, fault.ReasonBatchTooLarge,
				"batch has more than %d requests; the limit is %d", max, max)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fault.Wrap(fault.Parse, fault.ReasonParse, err, "body is not valid JSON")
		}
		elems = append(elems, raw)
	}
	if len(elems) == 0 {
		return nil, fault.New(fault.InvalidRequest, fault.ReasonEmptyBatch, "empty batch")
	}
	return elems, nil
}

// decodeRequest validates one request object. On failure it returns the id
// to echo in the error response (nil = null): the request's id when it was
// itself valid, else null.
func decodeRequest(raw []byte) (*Request, json.RawMessage, *fault.Error) {
	raw = bytes.Trim(raw, jsonSpace)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil, invalid("request must be a JSON object")
	}
	if err := checkDuplicates(raw); err != nil {
		return nil, nil, fault.Wrap(fault.InvalidRequest, fault.ReasonInvalidRequest, err, err.Error())
	}
	var id, version, method, params json.RawMessage // nil: absent
	_ = objectMembers(raw, func(name string, val json.RawMessage) error {
		switch name {
		case "id":
			id = val
		case "jsonrpc":
			version = val
		case "method":
			method = val
		case "params":
			params = val
		}
		return nil
	})

	req := &Request{}
	var echo json.RawMessage
	if id != nil {
		switch kindOf(id) {
		case '"', '0', 'n':
			req.ID = id
			echo = id
		default:
			return nil, nil, invalid("id must be a string, a number or null")
		}
	}
	if version == nil || !isString(version, "2.0") {
		return nil, echo, invalid(`member "jsonrpc" must be exactly "2.0"`)
	}
	if method == nil || kindOf(method) != '"' {
		return nil, echo, invalid(`member "method" must be a string`)
	}
	var ok bool
	if req.Method, ok = stringValue(method); !ok || req.Method == "" {
		return nil, echo, invalid(`member "method" must be a non-empty string`)
	}
	if params != nil {
		if k := kindOf(params); k != '{' && k != '[' {
			return nil, echo, invalid(`member "params" must be an object or an array`)
		}
		req.Params = params
	}
	return req, nil, nil
}

func invalid(msg string) *fault.Error {
	return fault.New(fault.InvalidRequest, fault.ReasonInvalidRequest, msg)
}

// kindOf classifies a raw JSON value by its first byte: '{', '[', '"',
// '0' (any number), 'n' (null), 'b' (boolean), or 0 for anything else.
func kindOf(raw []byte) byte {
	raw = bytes.TrimLeft(raw, jsonSpace)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == '{' || c == '[' || c == '"' || c == 'n':
		return c
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	case c == 't' || c == 'f':
		return 'b'
	}
	return 0
}

func isString(raw []byte, want string) bool {
	s, ok := stringValue(raw)
	return ok && s == want
}

// checkDuplicates reports the first object of raw, at any depth, that
// names a member twice ("a" and "\u0061" are the same name). Duplicate
// names are refused because parsers disagree on which one wins, which lets a
// request mean one thing to a proxy and another to the host. raw must be
// valid JSON; the scan is a single pass over the bytes.
func checkDuplicates(raw []byte) error {
	type container struct {
		object    bool
		expectKey bool
		keys      map[string]struct{}
	}
	var stack []container
	for i := 0; i < len(raw); {
		switch raw[i] {
		case '{', '[':
			stack = append(stack, container{object: raw[i] == '{', expectKey: raw[i] == '{'})
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].expectKey = true
			}
			i++
		case '"':
			end := stringEnd(raw, i)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := &stack[n-1]
				top.expectKey = false
				name, err := memberName(raw[i:end])
				if err != nil {
					return err
				}
				if _, dup := top.keys[name]; dup {
					return fmt.Errorf("duplicate member %q", name)
				}
				if top.keys == nil {
					top.keys = map[string]struct{}{}
				}
				top.keys[name] = struct{}{}
			}
			i = end
		default: // whitespace, ':', numbers, literals
			i++
		}
	}
	return nil
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
