package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
)

// References inside step params:
//
//	${steps.<id>.output}          the whole output of step <id>
//	${steps.<id>.output.a.0.b}    member a, element 0, member b of it
//	${plan.input.x}               member x of plan/execute's input
//	$${                           a literal "${"
//
// A string that is exactly one reference becomes the referenced JSON value
// (number, object, …); a reference inside a longer string is replaced by the
// value's text (a string as is, anything else as compact JSON).

const (
	refOpen     = "${"
	refEscape   = "$${"
	stepsPrefix = "steps."
	inputRoot   = "plan.input"
	outputPart  = ".output"
)

// ref is one parsed reference.
type ref struct {
	text string   // as written, e.g. "${steps.a.output.x}"
	step int      // the referenced step's index; -1 for plan.input
	path []string // members or element indexes below the output or input
}

// segment is a literal part of a string or one reference.
type segment struct {
	lit string
	ref *ref
}

// template is a string value of params split into segments.
type template []segment

// exact reports whether the template is a single reference.
func (t template) exact() bool { return len(t) == 1 && t[0].ref != nil }

// parseTemplate splits s into literals and references; index resolves a
// step id. It reports whether s had any reference or escape (so callers can
// keep params without either byte-for-byte).
func parseTemplate(s string, index map[string]int) (template, bool, error) {
	if !strings.Contains(s, refOpen) {
		return template{{lit: s}}, false, nil
	}
	var t template
	var lit strings.Builder
	for s != "" {
		k := strings.Index(s, "$")
		if k < 0 {
			lit.WriteString(s)
			break
		}
		lit.WriteString(s[:k])
		s = s[k:]
		switch {
		case strings.HasPrefix(s, refEscape):
			lit.WriteString(refOpen)
			s = s[len(refEscape):]
		case strings.HasPrefix(s, refOpen):
			end := strings.IndexByte(s, '}')
			if end < 0 {
				return nil, true, fmt.Errorf("%q is not closed by }", clip(s, 40))
			}
			r, err := parseRef(s[:end+1], index)
			if err != nil {
				return nil, true, err
			}
			if lit.Len() > 0 {
				t = append(t, segment{lit: lit.String()})
				lit.Reset()
			}
			t = append(t, segment{ref: r})
			s = s[end+1:]
		default:
			lit.WriteByte('$')
			s = s[1:]
		}
	}
	if lit.Len() > 0 || len(t) == 0 {
		t = append(t, segment{lit: lit.String()})
	}
	return t, true, nil
}

// parseRef parses "${…}".
func parseRef(text string, index map[string]int) (*ref, error) {
	body := text[len(refOpen) : len(text)-1]
	r := &ref{text: text, step: -1}
	var rest string
	switch {
	case body == inputRoot || strings.HasPrefix(body, inputRoot+"."):
		rest = strings.TrimPrefix(body, inputRoot)
	case strings.HasPrefix(body, stepsPrefix):
		tail := body[len(stepsPrefix):]
		found := false
		// A step id may contain dots: try every ".output" that ends the
		// reference or is followed by a path, and take the first known id.
		for k := strings.Index(tail, outputPart); k >= 0; {
			end := k + len(outputPart)
			if end == len(tail) || tail[end] == '.' {
				if j, ok := index[tail[:k]]; ok {
					r.step, rest, found = j, tail[end:], true
					break
				}
			}
			next := strings.Index(tail[k+1:], outputPart)
			if next < 0 {
				break
			}
			k += 1 + next
		}
		if !found {
			id, _, ok := strings.Cut(tail, outputPart)
			if !ok || id == "" {
				return nil, fmt.Errorf("%s is malformed; write ${steps.<id>.output} or ${steps.<id>.output.<path>}", clip(text, 80))
			}
			return nil, fmt.Errorf("%s names no step of this plan (%q)", clip(text, 80), clip(id, 64))
		}
	default:
		return nil, fmt.Errorf("%s is not a reference this host knows; use ${steps.<id>.output.<path>} or ${plan.input.<path>} (write $${ for a literal ${)", clip(text, 80))
	}
	if rest != "" {
		for _, seg := range strings.Split(rest[1:], ".") {
			if seg == "" {
				return nil, fmt.Errorf("%s has an empty path segment", clip(text, 80))
			}
			r.path = append(r.path, seg)
		}
	}
	return r, nil
}

// stepRefs are the parsed references of one step's params.
type stepRefs struct {
	refs []*ref // every reference, in order of appearance
	any  bool   // params hold a reference or an escape (must be rewritten)
}

// scanParams parses every string value of params (an object or empty).
func scanParams(params json.RawMessage, index map[string]int) (stepRefs, error) {
	var out stepRefs
	if len(params) == 0 {
		return out, nil
	}
	doc, err := decodeNumbers(params)
	if err != nil {
		return out, err
	}
	err = walkStrings(doc, func(s string) error {
		t, any, err := parseTemplate(s, index)
		if err != nil {
			return err
		}
		out.any = out.any || any
		for _, seg := range t {
			if seg.ref != nil {
				out.refs = append(out.refs, seg.ref)
			}
		}
		return nil
	})
	return out, err
}

// walkStrings calls fn for every string value (not member names) of doc,
// members in name order so errors are reported deterministically.
func walkStrings(doc any, fn func(string) error) error {
	switch v := doc.(type) {
	case string:
		return fn(v)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := walkStrings(v[k], fn); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := walkStrings(x, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkReferences refuses, at create time, references that are malformed,
// name an unknown step, or name a step that is not a dependency (direct or
// indirect) of the step using it.
func (d *Definition) checkReferences(g graph) error {
	index := d.index()
	var anc []bitset
	for i, s := range d.Steps {
		field := fmt.Sprintf("plan_definition.steps[%d].params", i)
		refs, err := scanParams(s.Params, index)
		if err != nil {
			return badReference(field, err.Error()).With("step_id", s.ID)
		}
		for _, r := range refs.refs {
			if r.step < 0 {
				continue
			}
			if anc == nil {
				anc = g.ancestors()
			}
			if !anc[i].has(r.step) {
				return badReference(field, fmt.Sprintf("%s: step %q is not a dependency of step %q; list it (or a step after it) in depends_on",
					clip(r.text, 80), d.Steps[r.step].ID, s.ID)).With("step_id", s.ID)
			}
		}
	}
	return nil
}

// checkInput refuses, at execute time, ${plan.input…} references the input
// does not satisfy (InvalidParams invalid_reference), and steps whose params
// would exceed limit bytes once the input's references are resolved
// (ResourceExhausted params_too_large): that size is known before any step
// runs, so such a plan is refused before a job is queued. References to step
// outputs count as nothing here; they are counted when the step runs.
func (d *Definition) checkInput(input json.RawMessage, limit int) error {
	var doc any
	index := d.index()
	r := &resolver{d: d, index: index, input: input, roots: map[int]any{}, lenient: true}
	if len(input) > 0 {
		var err error
		if doc, err = decodeNumbers(input); err != nil {
			return badReference("input", "is not valid JSON")
		}
		r.roots[-1] = doc // decoded once for every step
	}
	for i, s := range d.Steps {
		refs, err := scanParams(s.Params, index)
		if err != nil {
			return badReference(fmt.Sprintf("plan_definition.steps[%d].params", i), err.Error())
		}
		usesInput := false
		for _, r := range refs.refs {
			if r.step >= 0 {
				continue
			}
			usesInput = true
			if len(input) == 0 {
				return badReference("input", fmt.Sprintf("is required: step %q uses %s", s.ID, clip(r.text, 80))).With("step_id", s.ID)
			}
			if _, err := lookup(doc, r.path); err != nil {
				return badReference("input", fmt.Sprintf("does not satisfy step %q: %s: %v", s.ID, clip(r.text, 80), err)).With("step_id", s.ID)
			}
		}
		if !usesInput {
			continue
		}
		params, _ := decodeNumbers(s.Params) // scanParams decoded it
		fits, err := r.measure(params, &meter{max: limit})
		if err != nil {
			return badReference("input", fmt.Sprintf("does not satisfy step %q: %v", s.ID, err)).With("step_id", s.ID)
		}
		if !fits {
			return fault.Newf(fault.ResourceExhausted, fault.ReasonParamsTooLarge,
				"input: step %q: params with the input's references resolved would exceed %d bytes", s.ID, limit).
				With("step_id", s.ID).With("field", "input")
		}
	}
	return nil
}

func badReference(field, msg string) *fault.Error {
	return fault.New(fault.InvalidParams, fault.ReasonInvalidReference, field+" "+msg).With("field", field)
}

// index maps step ids to their indexes.
func (d *Definition) index() map[string]int {
	index := make(map[string]int, len(d.Steps))
	for i, s := range d.Steps {
		index[s.ID] = i
	}
	return index
}
