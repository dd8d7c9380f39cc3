package plan

import (
	"bytes"
	"encoding/json"
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
//
// The resolved size is counted before anything is built (see measure): an
// exact reference adds the encoded size of the value it stands for, a
// reference inside a longer string the value's text. Params that hold one
// large value many times are refused having allocated next to nothing,
// never after encoding every copy.
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
	r := &resolver{d: d, index: index, output: output, input: input, roots: map[int]any{}}
	m := &meter{max: limit}
	fits, err := r.measure(doc, m)
	if err != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonReferenceMissing, "step %q: %v", s.ID, err).With("step_id", s.ID)
	}
	if !fits {
		return nil, paramsTooLarge(s.ID, limit)
	}
	out, err := r.build(doc)
	if err != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonReferenceMissing, "step %q: %v", s.ID, err).With("step_id", s.ID)
	}
	enc, err := encodeJSON(out)
	if err != nil {
		return nil, fault.Newf(fault.InvalidParams, fault.ReasonReferenceMissing, "step %q: params do not encode: %v", s.ID, err)
	}
	if len(enc) > limit { // the count is exact; this only guards it
		return nil, paramsTooLarge(s.ID, limit)
	}
	return enc, nil
}

func paramsTooLarge(stepID string, limit int) *fault.Error {
	return fault.Newf(fault.ResourceExhausted, fault.ReasonParamsTooLarge,
		"step %q: params with references resolved exceed %d bytes", stepID, limit).With("step_id", stepID)
}

// resolver reads the values references stand for: plan/execute's input
// and the steps' checkpointed outputs, each decoded once.
type resolver struct {
	d      *Definition
	index  map[string]int
	output func(int) json.RawMessage // nil: outputs are not known yet (see lenient)
	input  json.RawMessage
	roots  map[int]any
	// lenient counts references to step outputs as nothing: plan/execute
	// counts what the input alone adds, before any step has run.
	lenient bool
}

// skip reports whether a reference is left out of a lenient count.
func (r *resolver) skip(x *ref) bool { return r.lenient && x.step >= 0 }

// value returns the value x stands for.
func (r *resolver) value(x *ref) (any, error) {
	v, ok := r.roots[x.step]
	if !ok {
		raw := r.input
		if x.step >= 0 {
			raw = r.output(x.step)
		}
		if len(raw) == 0 {
			if x.step >= 0 {
				return nil, fmt.Errorf("%s: step %q has no output yet", clip(x.text, 80), r.d.Steps[x.step].ID)
			}
			return nil, fmt.Errorf("%s: plan/execute was given no input", clip(x.text, 80))
		}
		var err error
		if v, err = decodeNumbers(raw); err != nil {
			return nil, fmt.Errorf("%s: %w", clip(x.text, 80), err)
		}
		r.roots[x.step] = v
	}
	v, err := lookup(v, x.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", clip(x.text, 80), err)
	}
	return v, nil
}

// measure counts into m the encoding of doc (decoded params) with every
// reference resolved, building nothing: false once the count passes m.max.
// Members are visited in name order, as build does, so the first failing
// reference is the same in both.
func (r *resolver) measure(doc any, m *meter) (bool, error) {
	switch v := doc.(type) {
	case string:
		return r.measureString(v, m)
	case map[string]any:
		if !m.add(2 + max(len(v)-1, 0)) {
			return false, nil
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if !m.add(3) || !m.text(k, false) {
				return false, nil
			}
			if fits, err := r.measure(v[k], m); !fits || err != nil {
				return fits, err
			}
		}
		return true, nil
	case []any:
		if !m.add(2 + max(len(v)-1, 0)) {
			return false, nil
		}
		for _, x := range v {
			if fits, err := r.measure(x, m); !fits || err != nil {
				return fits, err
			}
		}
		return true, nil
	}
	return m.value(doc, false), nil
}

// measureString counts one string of params once resolved: an exact
// reference as the value's encoding, any other string as a JSON string of
// its literal parts and each reference's text.
func (r *resolver) measureString(s string, m *meter) (bool, error) {
	t, _, err := parseTemplate(s, r.index)
	if err != nil {
		return false, err
	}
	if t.exact() {
		if r.skip(t[0].ref) {
			return true, nil
		}
		v, err := r.value(t[0].ref)
		if err != nil {
			return false, err
		}
		return m.value(v, false), nil
	}
	if !m.add(2) {
		return false, nil
	}
	for _, seg := range t {
		if seg.ref == nil {
			if !m.text(seg.lit, false) {
				return false, nil
			}
			continue
		}
		if r.skip(seg.ref) {
			continue
		}
		v, err := r.value(seg.ref)
		if err != nil {
			return false, err
		}
		fits := false
		if text, ok := v.(string); ok {
			fits = m.text(text, false)
		} else {
			fits = m.value(v, true) // its JSON text, escaped as a string's
		}
		if !fits {
			return false, nil
		}
	}
	return true, nil
}

// build returns doc with every reference replaced. Exact references share
// the referenced value (encoded once, by the caller); call it only once
// measure has shown the result fits.
func (r *resolver) build(doc any) (any, error) {
	var failed error
	out := mapStrings(doc, func(str string) any {
		if failed != nil {
			return str
		}
		t, _, err := parseTemplate(str, r.index)
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
			v, err := r.value(seg.ref)
			if err != nil {
				failed = err
				return str
			}
			if t.exact() {
				return v
			}
			if text, ok := v.(string); ok {
				b.WriteString(text)
			} else {
				enc, _ := encodeJSON(v) // decoded JSON always encodes
				b.Write(enc)
			}
		}
		return b.String()
	})
	return out, failed
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
