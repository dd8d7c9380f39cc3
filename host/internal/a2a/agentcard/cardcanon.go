package agentcard

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"unicode"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// schemaJSON is the A2A v1.0 JSON Schema generated from the official
// a2a.proto (a copy of shared/spec/a2a-v1.0.schema.json). Card
// canonicalization reads the AgentCard message tree from it.
//
//go:embed schema/a2a-v1.0.schema.json
var schemaJSON []byte

// Canonical returns the signing payload of an Agent Card (spec §8.4.1)
// exactly as the official SDKs compute it (@a2a-js/sdk canonicalizeAgentCard,
// a2a-python canonicalize_agent_card): the card is read as the v1.0
// AgentCard message (members outside the v1.0 schema — the v0.3 keys of a
// union card — are dropped; snake_case member names are read as their
// camelCase field), fields equal to their proto default are omitted unless
// the field is optional (proto3 presence), `signatures` is removed, then
// empty strings, arrays and objects and nulls are removed recursively, and
// the result is serialized by JCS (RFC 8785).
func Canonical(card []byte) ([]byte, error) {
	s, err := loadCardSchema()
	if err != nil {
		return nil, err
	}
	if err := identity.CheckStrict(card); err != nil { // a repeated member would be read one way here, another way elsewhere
		return nil, fmt.Errorf("a2a: canonicalize card: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(card))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("a2a: canonicalize card: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a2a: canonicalize card: not a JSON object")
	}
	out := s.project(m, s.defs["Agent Card"])
	delete(out, "signatures")
	cleaned := cleanEmpty(out)
	if cleaned == nil {
		cleaned = map[string]any{}
	}
	b, err := json.Marshal(cleaned)
	if err != nil {
		return nil, fmt.Errorf("a2a: canonicalize card: %w", err)
	}
	return identity.Canonical(b)
}

// schemaDef is one message of the schema: its fields by JSON (camelCase)
// name.
type schemaDef struct {
	Title      string                    `json:"title"`
	Properties map[string]schemaProperty `json:"properties"`
}

// schemaProperty is a field: a message ($ref), a repeated field (items), a
// map (additionalProperties) or a scalar; a scalar with a default is a
// plain proto3 field (omitted when equal to it), one without is optional.
type schemaProperty struct {
	Ref        string          `json:"$ref"`
	Type       any             `json:"type"`
	Default    json.RawMessage `json:"default"`
	Items      *schemaProperty `json:"items"`
	Additional json.RawMessage `json:"additionalProperties"`
}

type cardSchema struct {
	defs map[string]*schemaDef
}

var (
	cardSchemaOnce sync.Once
	cardSchemaVal  *cardSchema
	cardSchemaErr  error
)

func loadCardSchema() (*cardSchema, error) {
	cardSchemaOnce.Do(func() {
		var doc struct {
			Definitions map[string]*schemaDef `json:"definitions"`
		}
		if err := json.Unmarshal(schemaJSON, &doc); err != nil {
			cardSchemaErr = fmt.Errorf("a2a: card schema: %w", err)
			return
		}
		if doc.Definitions["Agent Card"] == nil {
			cardSchemaErr = fmt.Errorf("a2a: card schema has no Agent Card")
			return
		}
		cardSchemaVal = &cardSchema{defs: doc.Definitions}
	})
	return cardSchemaVal, cardSchemaErr
}

// ref resolves "#/definitions/Agent%20Skill".
func (s *cardSchema) ref(r string) *schemaDef {
	name, err := url.PathUnescape(strings.TrimPrefix(r, "#/definitions/"))
	if err != nil {
		return nil
	}
	return s.defs[name]
}

// isStruct reports a google.protobuf.Struct (free JSON, kept as it is).
func (d *schemaDef) isStruct() bool { return d != nil && d.Title == "Struct" && len(d.Properties) == 0 }

// project reads m as the message def and writes it back as proto JSON.
func (s *cardSchema) project(m map[string]any, def *schemaDef) map[string]any {
	out := map[string]any{}
	if def == nil {
		return out
	}
	for name, p := range def.Properties {
		v, ok := m[name]
		if !ok || v == nil {
			v, ok = m[snakeCase(name)]
		}
		if !ok || v == nil {
			continue
		}
		if pv, keep := s.field(v, p); keep {
			out[name] = pv
		}
	}
	return out
}

// field converts one field's value; keep is false when proto JSON omits it.
func (s *cardSchema) field(v any, p schemaProperty) (any, bool) {
	switch {
	case p.Ref != "":
		return s.message(v, s.ref(p.Ref))
	case p.Items != nil:
		arr, ok := v.([]any)
		if !ok || len(arr) == 0 {
			return nil, false
		}
		out := make([]any, 0, len(arr))
		for _, e := range arr {
			if e == nil {
				continue
			}
			if ev, keep := s.field(e, *p.Items); keep {
				out = append(out, ev)
			} else if p.Items.Ref != "" {
				out = append(out, map[string]any{}) // a message element is kept (then cleaned)
			}
		}
		return out, len(out) > 0
	case len(p.Additional) > 0 && string(p.Additional) != "false":
		obj, ok := v.(map[string]any)
		if !ok || len(obj) == 0 {
			return nil, false
		}
		var vp schemaProperty
		if err := json.Unmarshal(p.Additional, &vp); err != nil {
			return nil, false
		}
		out := map[string]any{}
		for k, e := range obj {
			if ev, keep := s.field(e, vp); keep {
				out[k] = ev
			} else if vp.Ref != "" {
				out[k] = map[string]any{}
			}
		}
		return out, len(out) > 0
	}
	return scalar(v, p)
}

func (s *cardSchema) message(v any, def *schemaDef) (any, bool) {
	if def.isStruct() {
		obj, ok := v.(map[string]any)
		return obj, ok
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return map[string]any{}, true
	}
	return s.project(obj, def), true
}

// scalar keeps an optional field's value and a plain field's value unless
// it is the proto default.
func scalar(v any, p schemaProperty) (any, bool) {
	if len(p.Default) == 0 {
		return v, true // optional: presence is kept
	}
	switch x := v.(type) {
	case string:
		return x, x != ""
	case bool:
		return x, x
	case json.Number:
		f, err := x.Float64()
		return x, err != nil || f != 0
	}
	return v, true
}

// cleanEmpty drops empty strings, nulls and empty arrays and objects,
// recursively (an object or array left empty is dropped too), as the SDKs'
// cleanEmpty/_clean_empty do. Booleans and numbers are kept.
func cleanEmpty(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if x == "" {
			return nil
		}
		return x
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if c := cleanEmpty(e); c != nil {
				out = append(out, c)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if c := cleanEmpty(e); c != nil {
				out[k] = c
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	return v
}

// snakeCase is the proto field name of a JSON (lowerCamel) name.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
