package plugin

import (
	"encoding/json"
	"testing"
)

// BenchmarkCheckInput is the input check of a skill without an
// input_schema, the common case of skill/execute.
func BenchmarkCheckInput(b *testing.B) {
	sk := &Skill{ID: "echo"}
	in := json.RawMessage(`{"text":"hello, benchmark","n":[1,2,3],"nested":{"a":true}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, fe := checkInput(sk, Call{Input: in}); fe != nil {
			b.Fatal(fe)
		}
	}
}
