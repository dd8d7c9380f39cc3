package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
)

// Bind decodes the params into v strictly: a member v does not know is an
// error, except the spec-001 envelope members (request_id, timestamp,
// version, session_id), which are always allowed and are decoded into v when
// v has fields for them. Member names are case-sensitive (encoding/json alone
// would fold "SESSION_ID" onto session_id while the envelope reader does
// not, so one request could carry two session ids). Absent params leave v
// unchanged. Failures are *fault.Error of kind InvalidParams whose message
// and data name the field.
func (r *Request) Bind(v any) error {
	if len(r.Params) == 0 {
		return nil
	}
	params := []byte(r.Params)
	stripped := map[string]bool{}
	for {
		err := decodeStrict(params, v)
		if err == nil {
			return checkExactNames(params, v)
		}
		if f, ok := unknownField(err); ok && isEnvelopeKey(f) && !stripped[f] {
			stripped[f] = true
			params = withoutMember(params, f)
			continue
		}
		return bindError(err)
	}
}

func decodeStrict(params []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// unknownField extracts the member name from encoding/json's unknown-field
// error, which has no dedicated type.
func unknownField(err error) (string, bool) {
	const prefix = "json: unknown field "
	msg := err.Error()
	i := strings.Index(msg, prefix)
	if i < 0 {
		return "", false
	}
	var name string
	if json.Unmarshal([]byte(msg[i+len(prefix):]), &name) != nil {
		return "", false
	}
	return name, true
}

// withoutMember returns the top-level object params without member key.
// params is a valid object without duplicate members.
func withoutMember(params []byte, key string) []byte {
	dec := json.NewDecoder(bytes.NewReader(params))
	if _, err := dec.Token(); err != nil {
		return params
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return params
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return params
		}
		name, _ := tok.(string)
		if name == key {
			continue
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes()
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
	if f, ok := unknownField(err); ok {
		return fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err,
			fmt.Sprintf("params: unknown field %q", f)).With("field", f)
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

// checkExactNames refuses a top-level params member whose name matches a
// field of v only case-insensitively.
func checkExactNames(params []byte, v any) error {
	t := reflect.TypeOf(v)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(params, &members) != nil {
		return nil
	}
	names := map[string]bool{}
	collectJSONNames(t, names)
	for m := range members {
		if names[m] || isEnvelopeKey(m) {
			continue
		}
		for n := range names {
			if strings.EqualFold(m, n) {
				return fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams,
					"params: unknown field %q (member names are case-sensitive: did you mean %q?)", m, n).With("field", m)
			}
		}
	}
	return nil
}

// collectJSONNames adds the JSON member names of struct type t, including
// those of embedded structs, to names.
func collectJSONNames(t reflect.Type, names map[string]bool) {
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
				collectJSONNames(ft, names)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = true
	}
}
