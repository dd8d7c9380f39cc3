package plugin

import (
	"encoding/json"
	"testing"
)

// BenchmarkCheckInput is the input check of a skill without an
// input_schema, the common case of skill/execute: scanned when the caller
// only has bytes, passed through when its decode of the params already
// read them (skill/execute's skill_params, Call.InputJSON).
func BenchmarkCheckInput(b *testing.B) {
	sk := &Skill{ID: "echo"}
	in := json.RawMessage(`{"text":"hello, benchmark","n":[1,2,3],"nested":{"a":true}}`)
	for _, bc := range []struct {
		name string
		call Call
	}{{"scanned", Call{Input: in}}, {"decoded-by-caller", Call{Input: in, InputJSON: true}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, fe := checkInput(sk, bc.call); fe != nil {
					b.Fatal(fe)
				}
			}
		})
	}
}
