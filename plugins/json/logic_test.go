package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/skillhost/skillhost/sdk"
)

// canon re-encodes a value so numbers and maps compare as JSON text.
func canon(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	return string(b)
}

func wantInvalid(t *testing.T, err error, contains string) {
	t.Helper()
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput || !strings.Contains(se.Message, contains) {
		t.Fatalf("error = %v, want invalid_input containing %q", err, contains)
	}
}

const doc = `{"a":{"b":[{"c":1},{"c":12345678901234567890}]},"k.dot":true,"list":[1,2,3],"n":{"0":"zero"}}`

func TestQuery(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path      string
		wantFound bool
		wantValue string
	}{
		{"a.b[0].c", true, `1`},
		{"a.b[1].c", true, `12345678901234567890`}, // exact, not rounded through float64
		{"$.a.b[-1].c", true, `12345678901234567890`},
		{`["k.dot"]`, true, `true`},
		{`['k.dot']`, true, `true`},
		{"list[2]", true, `3`},
		{"list.1", true, `2`},
		{"n[0]", true, `"zero"`},
		{"", true, doc},
		{"$", true, doc},
		{"a.missing", false, `null`},
		{"list[3]", false, `null`},
		{"list[-4]", false, `null`},
		{"a.b[0].c.d", false, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			got, err := query(QueryIn{Document: json.RawMessage(doc), Path: tt.path})
			if err != nil {
				t.Fatal(err)
			}
			if got.Found != tt.wantFound {
				t.Errorf("found = %v, want %v", got.Found, tt.wantFound)
			}
			if diff := cmp.Diff(canon(t, json.RawMessage(tt.wantValue)), canon(t, got.Value)); diff != "" {
				t.Errorf("value (-want +got):\n%s", diff)
			}
		})
	}
}

func TestQueryRefusesBadPaths(t *testing.T) {
	t.Parallel()
	tests := []struct{ path, want string }{
		{"a..b", "empty key"},
		{"a.", "empty key"},
		{"a[x]", "not an integer"},
		{"a[1", "unterminated"},
		{`a["x]`, "unterminated quoted key"},
		{"a[0]b", "expected '.' or '['"},
		{strings.Repeat("a.", 300) + "a", "more than 256 segments"},
		{strings.Repeat("a", maxPathLen+1), "the limit is 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			_, err := query(QueryIn{Document: json.RawMessage(`{}`), Path: tt.path})
			wantInvalid(t, err, tt.want)
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}}}`
	tests := []struct {
		name string
		doc  string
		want ValidateOut
	}{
		{"valid", `{"name":"ada","age":36}`, ValidateOut{Valid: true, Errors: []Violation{}}},
		{"missing and negative", `{"age":-1}`, ValidateOut{Errors: []Violation{
			{Path: "", Keyword: "/required", Message: "missing property 'name'"},
			{Path: "/age", Keyword: "/properties/age/minimum", Message: "minimum: got -1, want 0"},
		}}},
		{"wrong type", `[]`, ValidateOut{Errors: []Violation{
			{Path: "", Keyword: "/type", Message: "got array, want object"},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := validate(ValidateIn{Document: json.RawMessage(tt.doc), Schema: json.RawMessage(schema)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpSortViolations); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

var cmpSortViolations = cmp.Transformer("sort", func(in []Violation) map[string]Violation {
	m := map[string]Violation{}
	for _, v := range in {
		m[v.Keyword] = v
	}
	return m
})

func TestValidateRefusesHostileSchemas(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, schema, want string }{
		{"remote ref", `{"$ref":"https://example.com/s.json"}`, "refused"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "refused"},
		{"bad type", `{"type":"nope"}`, "schema does not compile"},
		{"not json", `{"type":`, "schema is not valid JSON"},
		{"missing", ``, "schema is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := validate(ValidateIn{Document: json.RawMessage(`{}`), Schema: json.RawMessage(tt.schema)})
			wantInvalid(t, err, tt.want)
		})
	}
}

func TestValidateCapsViolations(t *testing.T) {
	t.Parallel()
	items := strings.TrimSuffix(strings.Repeat(`"x",`, 500), ",")
	got, err := validate(ValidateIn{
		Document: json.RawMessage("[" + items + "]"),
		Schema:   json.RawMessage(`{"items":{"type":"integer"}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.Valid || len(got.Errors) != maxViolations {
		t.Fatalf("valid=%v, %d violations; want invalid with %d", got.Valid, len(got.Errors), maxViolations)
	}
}

// TestMerge covers the examples of RFC 7386 appendix A.
func TestMerge(t *testing.T) {
	t.Parallel()
	tests := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.target+"+"+tt.patch, func(t *testing.T) {
			t.Parallel()
			got, err := merge(MergeIn{Target: json.RawMessage(tt.target), Patch: json.RawMessage(tt.patch)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(canon(t, json.RawMessage(tt.want)), canon(t, got.Result)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeRefusesTrailingData(t *testing.T) {
	t.Parallel()
	_, err := merge(MergeIn{Target: json.RawMessage(`{} {}`), Patch: json.RawMessage(`{}`)})
	wantInvalid(t, err, "trailing data")
}
