package jsonrpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// The params of most methods are a flat object of strings and raw values
// (skill/execute: session_id, skill_id, skill_params). Bind decodes those
// straight from the members the engine's read of the body kept, without a
// second pass of a decoder over the params (a tenth of a small call's
// engine time): each member is a string for a string field or any value but
// null for a json.RawMessage field, the value the decoder would give. A
// member of any other field, a null, or a type with fields of other shapes
// takes the decoder, as before.

// flatKind is how a field of a flat struct is decoded.
type flatKind uint8

const (
	flatOther  flatKind = iota // only the decoder decodes it
	flatString                 // a string field: a JSON string
	flatRaw                    // a json.RawMessage field: any value but null, copied
)

// flatField is one field of a flat struct.
type flatField struct {
	index int
	kind  flatKind
}

// flatPlan is the fields of a struct type by JSON member name; nil when the
// type is not one Bind decodes from the members (embedded fields, tag
// options other than omitempty, a repeated name).
type flatPlan map[string]flatField

var flatPlans sync.Map // reflect.Type -> flatPlan

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func flatPlanOf(t reflect.Type) flatPlan {
	if p, ok := flatPlans.Load(t); ok {
		return p.(flatPlan)
	}
	p := makeFlatPlan(t)
	flatPlans.Store(t, p)
	return p
}

func makeFlatPlan(t reflect.Type) flatPlan {
	if decodesItself(t) {
		return nil
	}
	plan := flatPlan{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil
		}
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if opts != "" && opts != "omitempty" {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := plan[name]; dup {
			return nil
		}
		kind := flatOther
		switch {
		case f.Type == rawMessageType:
			kind = flatRaw
		case f.Type.Kind() == reflect.String && f.Type.PkgPath() == "":
			kind = flatString
		}
		plan[name] = flatField{index: i, kind: kind}
	}
	return plan
}

// envelopeString is the envelope's string for member name when the
// envelope read it from this very literal (a plain one: no escapes), so a
// session_id the envelope and the params both hold is one string.
func (r *Request) envelopeString(name []byte, lit json.RawMessage) (string, bool) {
	var s string
	switch string(name) {
	case envSessionID:
		s = r.Meta.SessionID
	case envRequestID:
		s = r.Meta.RequestID
	default:
		return "", false
	}
	if len(lit) != len(s)+2 || lit[0] != '"' || string(lit[1:len(lit)-1]) != s || bytes.IndexByte(lit, '\\') >= 0 {
		return "", false
	}
	return s, true
}

// bindFlat decodes the kept params members into v, a pointer to a flat
// struct, and reports whether it did; when it did not, v is unchanged.
// checkTop has accepted every member's name.
func (r *Request) bindFlat(v any) bool {
	if !r.kept() {
		return false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return false
	}
	plan := flatPlanOf(rv.Elem().Type())
	if plan == nil {
		return false
	}
	for _, m := range r.members {
		f, ok := plan[string(m.name)]
		switch {
		case !ok:
			if !isEnvelopeKey(string(m.name)) {
				return false
			}
		case f.kind == flatString:
			if kindOf(m.value) != '"' {
				return false
			}
		case f.kind == flatRaw:
			if kindOf(m.value) == 'n' {
				return false
			}
		default:
			return false
		}
	}
	st := rv.Elem()
	for _, m := range r.members {
		f, ok := plan[string(m.name)]
		if !ok {
			continue
		}
		switch f.kind {
		case flatString:
			s, ok := r.envelopeString(m.name, m.value)
			if !ok {
				if s, ok = stringValue(m.value); !ok {
					return false // not reached: a string literal the engine read
				}
			}
			st.Field(f.index).SetString(s)
		case flatRaw:
			st.Field(f.index).SetBytes(bytes.Clone(m.value))
		}
	}
	return true
}
