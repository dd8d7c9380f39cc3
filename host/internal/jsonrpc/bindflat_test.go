package jsonrpc

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// flatParams has the shapes Bind decodes from the kept members (strings,
// raw values) and one it leaves to the decoder (a number).
type flatParams struct {
	SessionID string          `json:"session_id"`
	SkillID   string          `json:"skill_id,omitempty"`
	Params    json.RawMessage `json:"skill_params"`
	Timeout   *float64        `json:"timeout"`
	RequestID string          `json:"request_id"`
}

// TestBindFlatMatchesDecoder: Bind's decode from the kept members gives
// what the decoder gives (the same value, the same error), whatever the
// members hold.
func TestBindFlatMatchesDecoder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params string
		flat   bool // decoded from the members
	}{
		{"strings and a raw object", `{"session_id":"s1","skill_id":"echo","skill_params":{"text":"hi","n":1}}`, true},
		{"spaced raw value kept as sent", `{"skill_id":"echo","skill_params": { "a" : [1, 2] } }`, true},
		{"raw string, number, array", `{"skill_params":"x"}`, true},
		{"escapes decoded", `{"skill_id":"e\u0063ho\n\"","session_id":"\ud83d\ude00"}`, true},
		{"invalid UTF-8 replaced", "{\"skill_id\":\"caf\xe9\"}", true},
		{"lone surrogate replaced", `{"skill_id":"a\ud800b"}`, true},
		{"envelope member", `{"request_id":"r1","version":"1.0","skill_id":"echo"}`, true},
		{"a number field takes the decoder", `{"skill_id":"echo","timeout":1500}`, false},
		{"null string takes the decoder", `{"skill_id":null}`, false},
		{"null raw takes the decoder", `{"skill_params":null}`, false},
		{"wrong type takes the decoder", `{"skill_id":5}`, false},
		{"empty object", `{}`, true},
		{"envelope strings reused", `{"session_id":"s1","request_id":"r1"}`, true},
		{"escaped envelope strings", `{"session_id":"s\u0031","request_id":"r\n"}`, true},
		{"empty session id", `{"session_id":""}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + tt.params + `}`
			fast, _, ferr := decodeRequest([]byte(body))
			slow, _, serr := decodeRequest([]byte(body))
			if ferr != nil || serr != nil {
				t.Fatalf("decodeRequest: %v", ferr)
			}
			fast.Meta, _ = readEnvelope(fast, nil) // as the engine does: Bind may reuse its strings
			slow.Meta, _ = readEnvelope(slow, nil)
			slow.parsed = nil // not kept: the decoder decodes
			if got := func() bool { var p flatParams; return fast.bindFlat(&p) }(); got != tt.flat {
				t.Errorf("bindFlat = %v, want %v", got, tt.flat)
			}
			var got, want flatParams
			gerr, werr := fast.Bind(&got), slow.Bind(&want)
			if diff := cmp.Diff(errString(werr), errString(gerr)); diff != "" {
				t.Errorf("error (-decoder +flat):\n%s", diff)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("value (-decoder +flat):\n%s", diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A type with an embedded struct or tag options is left to the decoder.
func TestFlatPlanRefusesOtherShapes(t *testing.T) {
	t.Parallel()
	type inner struct {
		A string `json:"a"`
	}
	type embedded struct {
		inner
		B string `json:"b"`
	}
	type quoted struct {
		N int `json:"n,string"`
	}
	type named string
	type namedField struct {
		S named `json:"s"`
	}
	for name, v := range map[string]any{"embedded": embedded{}, "string option": quoted{}} {
		if p := makeFlatPlan(reflect.TypeOf(v)); p != nil {
			t.Errorf("%s: plan %v, want none", name, p)
		}
	}
	if p := makeFlatPlan(reflect.TypeOf(namedField{})); p["s"].kind != flatOther {
		t.Errorf("a named string type: kind %v, want the decoder's", p["s"].kind)
	}
}
