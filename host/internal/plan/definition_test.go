package plan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
)

func TestParseDefinitionRefusesBadPlans(t *testing.T) {
	t.Parallel()
	manySteps := make([]map[string]any, config.Defaults().Plans.MaxSteps+1)
	for i := range manySteps {
		manySteps[i] = step(fmt.Sprintf("s%d", i), "echo", "")
	}
	tests := []struct {
		name  string
		def   string
		field string
	}{
		{"missing", ``, "plan_definition"},
		{"null", `null`, "plan_definition"},
		{"not an object", `[1]`, "plan_definition"},
		{"unknown field", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"}],"extra":1}`, "plan_definition"},
		{"unknown step field", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","retries":3}]}`, "plan_definition"},
		{"retry not an object", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","retry":3}]}`, "plan_definition"},
		{"unknown retry field", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","retry":{"max_attempts":2,"jitter":1}}]}`, "plan_definition"},
		{"zero attempts", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","retry":{"max_attempts":0}}]}`, "plan_definition.steps[0].retry.max_attempts"},
		{"too many attempts", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","retry":{"max_attempts":11}}]}`, "plan_definition.steps[0].retry.max_attempts"},
		{"negative backoff", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","retry":{"max_attempts":2,"backoff_ms":-1}}]}`, "plan_definition.steps[0].retry.backoff_ms"},
		{"huge backoff", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","retry":{"max_attempts":2,"backoff_ms":60001}}]}`, "plan_definition.steps[0].retry.backoff_ms"},
		{"trailing data", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"}]} {}`, "plan_definition"},
		{"no name", `{"steps":[{"id":"a","type":"skill","action":"echo"}]}`, "plan_definition.name"},
		{"control character in name", `{"name":"a\u0007","steps":[{"id":"a","type":"skill","action":"echo"}]}`, "plan_definition.name"},
		{"no steps", `{"name":"x","steps":[]}`, "plan_definition.steps"},
		{"too many steps", string(definition(manySteps...)), "plan_definition.steps"},
		{"too large", `{"name":"x","description":"` + strings.Repeat("d", int(config.Defaults().Plans.MaxDefinition)) + `","steps":[]}`, "plan_definition"},
		{"bad step id", `{"name":"x","steps":[{"id":"a b","type":"skill","action":"echo"}]}`, "plan_definition.steps[0].id"},
		{"long step id", `{"name":"x","steps":[{"id":"` + strings.Repeat("a", 65) + `","type":"skill","action":"echo"}]}`, "plan_definition.steps[0].id"},
		{"duplicate step id", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo"},{"id":"a","type":"skill","action":"echo"}]}`, "plan_definition.steps[1].id"},
		{"no type", `{"name":"x","steps":[{"id":"a","action":"echo"}]}`, "plan_definition.steps[0].type"},
		{"unknown type", `{"name":"x","steps":[{"id":"a","type":"shell","action":"rm -rf /"}]}`, "plan_definition.steps[0].type"},
		{"no action", `{"name":"x","steps":[{"id":"a","type":"skill"}]}`, "plan_definition.steps[0].action"},
		{"agent without plugin", `{"name":"x","steps":[{"id":"a","type":"agent","action":"echo"}]}`, "plan_definition.steps[0].agent"},
		{"skill with agent", `{"name":"x","steps":[{"id":"a","type":"skill","agent":"p","action":"echo"}]}`, "plan_definition.steps[0].agent"},
		{"params not an object", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","params":"hi"}]}`, "plan_definition.steps[0].params"},
		{"negative timeout", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","timeout_ms":-1}]}`, "plan_definition.steps[0].timeout_ms"},
		{"huge timeout", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","timeout_ms":9000000000000}]}`, "plan_definition.steps[0].timeout_ms"},
		{"fractional timeout", `{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","timeout_ms":1.5}]}`, "plan_definition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseDefinition(json.RawMessage(tt.def), Config{})
			fe := fault.From(err)
			if err == nil || fe.Kind != fault.InvalidParams {
				t.Fatalf("err %v, want InvalidParams", err)
			}
			if diff := cmp.Diff(tt.field, fe.Data["field"]); diff != "" || !strings.HasPrefix(fe.Msg, tt.field+" ") {
				t.Errorf("field (-want +got):\n%s\nmessage %q", diff, fe.Msg)
			}
		})
	}
}

func TestParseDefinitionAcceptsSpecExample(t *testing.T) {
	t.Parallel()
	def, err := ParseDefinition(json.RawMessage(`{"name":"Deploy Application","steps":[
		{"id":"step_1","type":"skill","action":"build_application","params":{"version":"1.0"}},
		{"id":"step_2","type":"skill","action":"deploy_application","params":{"environment":"production"},"timeout_ms":5000},
		{"id":"step.3-x","type":"agent","agent":"ops","action":"notify","params":null}]}`), Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Definition{Name: "Deploy Application", Steps: []Step{
		{ID: "step_1", Type: TypeSkill, Action: "build_application", Params: json.RawMessage(`{"version":"1.0"}`), DependsOn: []string{}},
		{ID: "step_2", Type: TypeSkill, Action: "deploy_application", Params: json.RawMessage(`{"environment":"production"}`), TimeoutMS: 5000,
			DependsOn: []string{"step_1"}},
		{ID: "step.3-x", Type: TypeAgent, Agent: "ops", Action: "notify", DependsOn: []string{"step_2"}},
	}}
	if diff := cmp.Diff(want, def); diff != "" {
		t.Errorf("definition (-want +got):\n%s", diff)
	}
}

// FuzzParseDefinition: any input is either a valid definition within the
// caps or an InvalidParams error naming a field; never a panic.
func FuzzParseDefinition(f *testing.F) {
	f.Add(`{"name":"x","steps":[{"id":"a","type":"skill","action":"echo","params":{}}]}`)
	f.Add(`{"name":"x","steps":[{"id":"a","type":"agent","agent":"p","action":"echo","timeout_ms":5}]}`)
	f.Add(`{"name":"","steps":null}`)
	f.Add(`{"name":"d","steps":[{"id":"a","type":"skill","action":"e","depends_on":[]},{"id":"b","type":"skill","action":"e","depends_on":["a"],"params":{"x":"${steps.a.output.v.0}"}}]}`)
	f.Add(`{"name":"c","steps":[{"id":"a","type":"skill","action":"e","depends_on":["b"]},{"id":"b","type":"skill","action":"e","retry":{"max_attempts":2}}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		def, err := ParseDefinition(json.RawMessage(in), Config{})
		if err != nil {
			if fe := fault.From(err); fe.Kind != fault.InvalidParams || fe.Data["field"] == nil {
				t.Fatalf("error %v is not InvalidParams with a field", err)
			}
			return
		}
		if len(def.Steps) == 0 || len(def.Steps) > config.Defaults().Plans.MaxSteps || def.Name == "" {
			t.Fatalf("accepted %q", in)
		}
	})
}
