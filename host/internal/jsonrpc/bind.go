package jsonrpc

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/skillhost/skillhost/host/fault"
)

// Bind decodes the params into v strictly: a member v does not know is an
// error, except the spec-001 envelope members (request_id, timestamp,
// version, session_id) of a top-level object, which are always allowed and
// are decoded into v when v has fields for them. Member names are
// case-sensitive (encoding/json alone would fold "SESSION_ID" onto
// session_id while the envelope reader does not, so one request could carry
// two session ids). Absent params leave v unchanged. Failures are
// *fault.Error of kind InvalidParams whose message and data name the field.
//
// Unknown members are found by walking the params alongside v's type (see
// checkMembers; the top-level members are those the engine's read of the
// body kept, so that walk reads no byte again). The params are then decoded
// once, by the strict decoder of encoding/json/v2 (go-json-experiment/json,
// as identity.Decode): the engine has already refused repeated names, and
// names must match exactly. Only when that decode fails is the request read
// again with encoding/json, whose error the client gets as it always has:
// nothing depends on the text of either package's errors.
func (r *Request) Bind(v any) error {
	if len(r.Params) == 0 {
		return nil
	}
	if err := r.checkTop(reflect.TypeOf(v)); err != nil {
		return err
	}
	if r.bindFlat(v) {
		return nil
	}
	if jsonv2.Unmarshal(r.Params, v, jsonv2.RejectUnknownMembers(false)) == nil {
		return nil
	}
	if err := json.Unmarshal(r.Params, v); err != nil {
		return bindError(err)
	}
	return nil
}

// checkTop is checkMembers on the params object, from its kept members.
func (r *Request) checkTop(t reflect.Type) error {
	st := t
	for st != nil && st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st == nil || st.Kind() != reflect.Struct || kindOf(r.Params) != '{' || decodesItself(st) {
		return checkMembers(r.Params, t, true)
	}
	fields := fieldsOf(st)
	return r.params(func(name []byte, val json.RawMessage) error {
		if ft, ok := fields[string(name)]; ok { // no copy of name
			return checkMembers(val, ft, false)
		}
		return checkMember(fields, string(name), val, true)
	})
}

func decodesItself(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// checkMembers refuses an object member that the Go type t it decodes into
// has no field for (matched exactly, as the JSON name encoding/json would
// use), at any depth. Types that decode themselves (json.Unmarshaler,
// encoding.TextUnmarshaler), interfaces and maps accept any member. A value
// whose JSON type does not fit t is left to encoding/json, which reports it.
// top allows the envelope members on the top-level object.
func checkMembers(raw json.RawMessage, t reflect.Type, top bool) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		if decodesItself(t) {
			return nil
		}
	default:
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if kindOf(raw) != '{' {
			return nil
		}
		fields := fieldsOf(t)
		return eachMember(raw, func(name string, val json.RawMessage) error { return checkMember(fields, name, val, top) })
	case reflect.Map:
		if kindOf(raw) != '{' {
			return nil
		}
		return eachMember(raw, func(_ string, val json.RawMessage) error { return checkMembers(val, t.Elem(), false) })
	case reflect.Slice, reflect.Array:
		if kindOf(raw) != '[' {
			return nil
		}
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return nil
		}
		for _, el := range elems {
			if err := checkMembers(el, t.Elem(), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMember checks one member of an object decoded into a struct whose
// fields are fields.
func checkMember(fields map[string]reflect.Type, name string, val json.RawMessage, top bool) error {
	ft, ok := fields[name]
	switch {
	case ok:
		return checkMembers(val, ft, false)
	case top && isEnvelopeKey(name):
		return nil
	}
	for known := range fields {
		if strings.EqualFold(name, known) {
			return fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams,
				"params: unknown field %q (member names are case-sensitive: did you mean %q?)", name, known).With("field", name)
		}
	}
	return fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "params: unknown field %q", name).With("field", name)
}

// eachMember calls f for each member of the object raw, in order, until f
// fails (see objectMembers).
func eachMember(raw json.RawMessage, f func(name string, val json.RawMessage) error) error {
	return objectMembers(raw, f)
}

func bindError(err error) error {
	var invalidTarget *json.InvalidUnmarshalError
	if errors.As(err, &invalidTarget) {
		return fmt.Errorf("jsonrpc: Bind: %w", err) // programming error: internal
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		if typeErr.Field == "" {
			return fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err,
				fmt.Sprintf("params must be %s, got %s", article(typeErr.Type), typeErr.Value))
		}
		return fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err,
			fmt.Sprintf("params: field %q must be %s, got %s", typeErr.Field, article(typeErr.Type), typeErr.Value)).
			With("field", typeErr.Field)
	}
	return fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err, "params: "+err.Error())
}

// article describes a Go type for a client: "a string", "an object", ….
func article(t reflect.Type) string {
	if t == nil {
		return "a valid value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.String()
}

// structFields caches jsonFields by struct type (Bind runs on every call).
var structFields sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf returns the JSON member names of struct type t with their field
// types (read-only).
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := structFields.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	jsonFields(t, fields)
	structFields.Store(t, fields)
	return fields
}

// jsonFields adds the JSON member names of struct type t, with their field
// types, to fields, as encoding/json names them: fields promoted from
// embedded structs are added unless a shallower field has the name.
func jsonFields(t reflect.Type, fields map[string]reflect.Type) {
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	for _, et := range embedded {
		promoted := map[string]reflect.Type{}
		jsonFields(et, promoted)
		for name, ft := range promoted {
			if _, shadowed := fields[name]; !shadowed {
				fields[name] = ft
			}
		}
	}
}
