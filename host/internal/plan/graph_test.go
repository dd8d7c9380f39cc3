package plan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
)

func TestParseDefinitionRefusesBadGraphsAndReferences(t *testing.T) {
	t.Parallel()
	s := func(id, params string, deps ...string) string {
		out := `{"id":"` + id + `","type":"skill","action":"echo"`
		if params != "" {
			out += `,"params":` + params
		}
		if deps != nil {
			b, _ := json.Marshal(deps)
			if deps[0] == "-" {
				b = []byte("[]")
			}
			out += `,"depends_on":` + string(b)
		}
		return out + "}"
	}
	def := func(steps ...string) string { return `{"name":"x","steps":[` + strings.Join(steps, ",") + `]}` }
	tests := []struct {
		name, def, field, reason, msg string
	}{
		{"unknown dependency", def(s("a", ""), s("b", "", "zz")), "plan_definition.steps[1].depends_on[0]", fault.ReasonInvalidDependency, `"zz" names no step`},
		{"self dependency", def(s("a", "", "a")), "plan_definition.steps[0].depends_on[0]", fault.ReasonInvalidDependency, "itself"},
		{"repeated dependency", def(s("a", ""), s("b", "", "a", "a")), "plan_definition.steps[1].depends_on[1]", fault.ReasonInvalidDependency, "twice"},
		{"two-step cycle", def(s("a", "", "b"), s("b", "", "a")), "plan_definition.steps[0].depends_on", fault.ReasonInvalidDependency, "forms a cycle: a → b → a"},
		{"cycle behind a root", def(s("r", "", "-"), s("a", "", "r", "c"), s("b", "", "a"), s("c", "", "b")), "", fault.ReasonInvalidDependency, "forms a cycle"},
		{"malformed reference", def(s("a", ""), s("b", `{"x":"${steps.a}"}`)), "plan_definition.steps[1].params", fault.ReasonInvalidReference, "is malformed"},
		{"unclosed reference", def(s("a", ""), s("b", `{"x":"${steps.a.output"}`)), "plan_definition.steps[1].params", fault.ReasonInvalidReference, "not closed"},
		{"unknown root", def(s("a", `{"x":"${env.HOME}"}`)), "plan_definition.steps[0].params", fault.ReasonInvalidReference, "not a reference"},
		{"unknown step", def(s("a", ""), s("b", `{"x":["${steps.zz.output}"]}`)), "plan_definition.steps[1].params", fault.ReasonInvalidReference, `names no step`},
		{"not a dependency", def(s("a", "", "-"), s("b", `{"x":"${steps.a.output.v}"}`, "-")), "plan_definition.steps[1].params", fault.ReasonInvalidReference, "not a dependency"},
		{"later step", def(s("a", `{"x":"${steps.b.output}"}`), s("b", "")), "plan_definition.steps[0].params", fault.ReasonInvalidReference, "not a dependency"},
		{"own output", def(s("a", `{"x":"${steps.a.output}"}`)), "plan_definition.steps[0].params", fault.ReasonInvalidReference, "not a dependency"},
		{"empty segment", def(s("a", ""), s("b", `{"x":"${steps.a.output..v}"}`)), "plan_definition.steps[1].params", fault.ReasonInvalidReference, "empty path segment"},
		{"input typo", def(s("a", `{"x":"${plan.inputs.v}"}`)), "plan_definition.steps[0].params", fault.ReasonInvalidReference, "not a reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDefinition(json.RawMessage(tt.def), Config{})
			fe := fault.From(err)
			if err == nil || fe.Kind != fault.InvalidParams || fe.Reason != tt.reason {
				t.Fatalf("err %v (reason %q), want InvalidParams %s", err, fe.Reason, tt.reason)
			}
			field, _ := fe.Data["field"].(string)
			if tt.field != "" && field != tt.field {
				t.Errorf("field %q, want %q", field, tt.field)
			}
			if !strings.HasPrefix(fe.Msg, field+" ") || !strings.Contains(fe.Msg, tt.msg) {
				t.Errorf("message %q: want the field first and %q in it", fe.Msg, tt.msg)
			}
		})
	}
}

func TestParseDefinitionAcceptsGraphsAndReferences(t *testing.T) {
	t.Parallel()
	def, err := ParseDefinition(json.RawMessage(`{"name":"diamond","steps":[
		{"id":"d","type":"skill","action":"echo","depends_on":["b","c.x"],
		 "params":{"both":["${steps.b.output.v}","${steps.c.x.output}"],"text":"b=${steps.b.output.v} $${literal}","n":"${steps.a.output.items.0}"}},
		{"id":"a","type":"skill","action":"echo","depends_on":[]},
		{"id":"b","type":"skill","action":"echo","depends_on":["a"],"params":{"in":"${plan.input.name}"}},
		{"id":"c.x","type":"skill","action":"echo","depends_on":["a"],"retry":{"max_attempts":3,"backoff_ms":10}}]}`), Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, s := range def.Steps {
		got[s.ID] = s.DependsOn
	}
	want := map[string][]string{"d": {"b", "c.x"}, "a": {}, "b": {"a"}, "c.x": {"a"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dependencies (-want +got):\n%s", diff)
	}
}

func TestResolveParams(t *testing.T) {
	t.Parallel()
	def, err := ParseDefinition(json.RawMessage(`{"name":"refs","steps":[
		{"id":"a","type":"skill","action":"echo"},
		{"id":"b.1","type":"skill","action":"echo"},
		{"id":"c","type":"skill","action":"echo","depends_on":["a","b.1"],"params":{
			"exact_number":"${steps.a.output.n}", "exact_object":"${steps.a.output.obj}", "whole":"${steps.b.1.output}",
			"text":"n=${steps.a.output.n}, obj=${steps.a.output.obj}, s=${steps.a.output.s}", "escaped":"$${steps.a.output}",
			"element":"${steps.a.output.list.1}", "big":"${steps.a.output.big}", "input":"${plan.input.who}",
			"nested":[{"deep":"${steps.a.output.obj.k}"}], "plain":"no refs $ here"}}]}`), Config{})
	if err != nil {
		t.Fatal(err)
	}
	outputs := []json.RawMessage{
		json.RawMessage(`{"n":42,"obj":{"k":"v"},"s":"str","list":[10,20],"big":12345678901234567890123}`),
		json.RawMessage(`"just text"`),
	}
	got, ferr := def.resolveParams(2, func(i int) json.RawMessage { return outputs[i] }, json.RawMessage(`{"who":"ada"}`), 1<<20)
	if ferr != nil {
		t.Fatal(ferr)
	}
	want := `{"big":12345678901234567890123,"element":20,"escaped":"${steps.a.output}","exact_number":42,"exact_object":{"k":"v"},` +
		`"input":"ada","nested":[{"deep":"v"}],"plain":"no refs $ here","text":"n=42, obj={\"k\":\"v\"}, s=str","whole":"just text"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("resolved params (-want +got):\n%s", diff)
	}

	tests := []struct {
		name   string
		output json.RawMessage
		limit  int
		reason string
		msg    string
	}{
		{"missing member", json.RawMessage(`{"obj":{},"list":[1]}`), 1 << 20, fault.ReasonReferenceMissing, `${steps.a.output.big}: no member "big"`},
		{"index out of range", json.RawMessage(`{"n":1,"obj":{"k":1},"s":"","list":[1],"big":1}`), 1 << 20, fault.ReasonReferenceMissing, `no element "1"`},
		{"member of a string", json.RawMessage(`{"n":1,"obj":"flat","s":"","list":[1,2],"big":1}`), 1 << 20, fault.ReasonReferenceMissing, `cannot take "k" at obj of a string`},
		{"too large", json.RawMessage(`{"n":1,"obj":{"k":1},"s":"` + strings.Repeat("x", 300) + `","list":[1,2],"big":1}`), 200, fault.ReasonParamsTooLarge, "exceed 200 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			outs := []json.RawMessage{tt.output, json.RawMessage(`1`)}
			_, ferr := def.resolveParams(2, func(i int) json.RawMessage { return outs[i] }, json.RawMessage(`{"who":"x"}`), tt.limit)
			if ferr == nil || ferr.Reason != tt.reason || !strings.Contains(ferr.Msg, tt.msg) {
				t.Errorf("error %v, want reason %s mentioning %q", ferr, tt.reason, tt.msg)
			}
		})
	}
}

func TestCheckInput(t *testing.T) {
	t.Parallel()
	def, err := ParseDefinition(json.RawMessage(`{"name":"in","steps":[{"id":"a","type":"skill","action":"echo","params":{"x":"${plan.input.user.name}"}}]}`), Config{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, input, msg string
	}{
		{"ok", `{"user":{"name":"ada"}}`, ""},
		{"no input", ``, "is required"},
		{"missing member", `{"user":{}}`, `no member "name" at user`},
		{"not an object", `[1]`, `no element "user" (an array of 1)`},
		{"a string", `"ada"`, `cannot take "user" of a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := def.checkInput(json.RawMessage(tt.input), int(config.Defaults().Plans.MaxRecord))
			if tt.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			fe := fault.From(err)
			if err == nil || fe.Reason != fault.ReasonInvalidReference || fe.Data["field"] != "input" || !strings.Contains(fe.Msg, tt.msg) {
				t.Errorf("error %v, want invalid_reference on field input mentioning %q", err, tt.msg)
			}
		})
	}
}
