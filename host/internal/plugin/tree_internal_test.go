package plugin

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var treeSeeds = []string{
	`{"text":"hello","n":12345,"f":-1.5e-3,"big":123456789012345678901234567890}`,
	` [1, [2, {"a": null, "b": true, "c": false}], "x"] `,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":{"b":[]}}`,
	"\"caf\xe9\"", "{\"\xff\":1,\"\xfe\":2}", `"\ud800"`, `"\ud83d\ude00 \/ \u00e9"`,
	`{}`, `[]`, `""`, `0`, `-0`, `null`,
	``, ` `, `{`, `{"a":}`, `[1,]`, `1 2`, `{} x`, `tru`, "\ufeff1", `{"a" 1}`,
}

// TestDecodeJSONMatchesReference: the one-pass tree is the one the schema
// validator's own decoder builds, and a document it refuses is refused with
// that decoder's error.
func TestDecodeJSONMatchesReference(t *testing.T) {
	t.Parallel()
	for _, in := range treeSeeds {
		checkTree(t, []byte(in))
	}
}

func checkTree(t *testing.T, in []byte) {
	t.Helper()
	want, werr := jsonschema.UnmarshalJSON(bytes.NewReader(in))
	got, gerr := decodeJSON(in)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("decodeJSON(%q) error %v, reference %v", in, gerr, werr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("decodeJSON(%q) (-reference +one pass):\n%s", in, diff)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range treeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 4096 {
			return
		}
		checkTree(t, in)
	})
}

// BenchmarkDecodeJSON is the decode of a skill input for its input_schema.
func BenchmarkDecodeJSON(b *testing.B) {
	in := []byte(`{"text":"hello, benchmark","n":[1,2,3],"nested":{"a":true,"b":"x"}}`)
	b.Run("jsonschema.UnmarshalJSON", func(b *testing.B) { // before
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonschema.UnmarshalJSON(bytes.NewReader(in)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeJSON(in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var _ = json.Number("")
