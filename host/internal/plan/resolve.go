package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
)

// resolveParams returns step i's params with every reference replaced.
// output(j) is step j's checkpointed output. A reference to a path the value
// lacks is InvalidParams reference_missing; params over limit bytes are
// ResourceExhausted params_too_large.
func (d *Definition) resolveParams(i int, output func(int) json.RawMessage, input json.RawMessage, limit int) (json.RawMessage, *fault.Error) {
	s := d.Steps[i]
	index := d.index()
	refs, err := scanParams(s.Params, index)
	if err != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonInvalidReference, "step %q: %v", s.ID, err)
	}
	if !refs.any {
		return s.Params, nil
	}
	doc, _ := decodeNumbers(s.Params) // scanParams decoded it
	roots := map[int]any{}
	root := func(r *ref) (any, error) {
		if v, ok := roots[r.step]; ok {
			return v, nil
		}
		raw := input
		if r.step >= 0 {
			raw = output(r.step)
		}
		if len(raw) == 0 {
			if r.step >= 0 {
				return nil, fmt.Errorf("step %q has no output yet", d.Steps[r.step].ID)
			}
			return nil, fmt.Errorf("plan/execute was given no input")
		}
		v, err := decodeNumbers(raw)
		if err != nil {
			return nil, err
		}
		roots[r.step] = v
		return v, nil
	}
	var failed error
	out := mapStrings(doc, func(str string) any {
		if failed != nil {
			return str
		}
		t, _, err := parseTemplate(str, index)
		if err != nil {
			failed = err
			return str
		}
		var b strings.Builder
		for _, seg := range t {
			if seg.ref == nil {
				b.WriteString(seg.lit)
				continue
			}
			base, err := root(seg.ref)
			if err == nil {
				base, err = lookup(base, seg.ref.path)
			}
			if err != nil {
				failed = fmt.Errorf("%s: %w", clip(seg.ref.text, 80), err)
				return str
			}
			if t.exact() {
				return base
			}
			if text, ok := base.(string); ok {
				b.WriteString(text)
			} else {
				enc, _ := encodeJSON(base) // decoded JSON always encodes
				b.Write(enc)
			}
			if b.Len() > limit {
				failed = errTooLarge
				return str
			}
		}
		return b.String()
	})
	if failed == errTooLarge {
		return nil, paramsTooLarge(s.ID, limit)
	}
	if failed != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonReferenceMissing, "step %q: %v", s.ID, failed).With("step_id", s.ID)
	}
	enc, err := encodeJSON(out)
	if err != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonReferenceMissing, "step %q: params do not encode: %v", s.ID, err)
	}
	if len(enc) > limit {
		return nil, paramsTooLarge(s.ID, limit)
	}
	return enc, nil
}

var errTooLarge = errors.New("too large")

func paramsTooLarge(stepID string, limit int) *fault.Error {
	return fault.Newf(fault.ResourceExhausted, fault.ReasonParamsTooLarge,
		"step %q: params with references resolved exceed %d bytes", stepID, limit).With("step_id", stepID)
}

// mapStrings returns doc with every string value replaced by fn's result
// (members visited in name order).
func mapStrings(doc any, fn func(string) any) any {
	switch v := doc.(type) {
	case string:
		return fn(v)
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out[k] = mapStrings(v[k], fn)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for k, x := range v {
			out[k] = mapStrings(x, fn)
		}
		return out
	}
	return doc
}

// lookup follows path through objects (member names) and arrays (decimal
// indexes) from v.
func lookup(v any, path []string) (any, error) {
	for k, seg := range path {
		at := ""
		if k > 0 {
			at = " at " + strings.Join(path[:k], ".")
		}
		switch x := v.(type) {
		case map[string]any:
			m, ok := x[seg]
			if !ok {
				return nil, fmt.Errorf("no member %q%s", clip(seg, 64), at)
			}
			v = m
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) || seg != strconv.Itoa(n) {
				return nil, fmt.Errorf("no element %q%s (an array of %d)", clip(seg, 64), at, len(x))
			}
			v = x[n]
		default:
			return nil, fmt.Errorf("cannot take %q%s of a %s", clip(seg, 64), at, jsonType(x))
		}
	}
	return v, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	}
	return "value"
}

// encodeJSON encodes v compactly, leaving <, > and & as they are.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// decodeNumbers decodes JSON keeping numbers exact (json.Number).
func decodeNumbers(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
