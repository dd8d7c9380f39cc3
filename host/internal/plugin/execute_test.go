package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// execSkills is the skill list of the "exec" test plugin.
const execSkills = `  - id: echo
    description: echoes text
    input_schema:
      type: object
      properties: {text: {type: string}}
      required: [text]
  - id: raw-echo
    description: echoes anything
    function: echo
  - id: typed-echo
    description: echo with a contract it cannot keep
    function: echo
    output_schema: {type: object, required: [result]}
  - {id: spin, description: loops forever, function: loop}
  - {id: crash, description: traps, function: trap}
`

func newExecRegistry(t *testing.T) *Registry {
	t.Helper()
	root := t.TempDir()
	pluginSpec{name: "exec", skills: execSkills, extra: "limits: {timeout: 400ms}"}.write(t, root)
	pluginSpec{name: "other"}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	// The calls' deadlines are short: let the modules compile first.
	testutil.Eventually(t, time.Minute, "the background compiles", func() bool { return len(r.Loading()) == 0 })
	return r
}

func TestExecuteValidation(t *testing.T) {
	t.Parallel()
	r := newExecRegistry(t)
	tests := []struct {
		name   string
		call   Call
		kind   fault.Kind
		reason string
		msg    string
		data   map[string]any
	}{
		{"wrong type", Call{SkillID: "echo", Input: []byte(`{"text":5}`)}, fault.InvalidParams, fault.ReasonSchema,
			"skill echo: input does not match input_schema: at /text: got number, want string",
			map[string]any{"pointer": "/text", "skill_id": "echo", "plugin": "exec"}},
		{"empty input is {}", Call{SkillID: "echo"}, fault.InvalidParams, fault.ReasonSchema,
			"skill echo: input does not match input_schema: at (root): missing property 'text'",
			map[string]any{"pointer": "", "skill_id": "echo", "plugin": "exec", "session_id": "s1", "request_id": "r1"}},
		{"not json", Call{SkillID: "raw-echo", Input: []byte(`{"text":`)}, fault.InvalidParams, fault.ReasonInvalidParams,
			"skill raw-echo: input is not valid JSON: unexpected EOF",
			map[string]any{"skill_id": "raw-echo", "plugin": "exec"}},
		{"trailing data", Call{SkillID: "raw-echo", Input: []byte(`{} {}`)}, fault.InvalidParams, fault.ReasonInvalidParams,
			"skill raw-echo: input is not valid JSON: invalid character after top-level value",
			map[string]any{"skill_id": "raw-echo", "plugin": "exec"}},
		{"unknown skill", Call{SkillID: "nope"}, fault.InvalidParams, fault.ReasonUnknownSkill,
			`unknown skill "nope"; available: crash, echo, other-echo, raw-echo, spin, typed-echo`,
			map[string]any{"available": []string{"crash", "echo", "other-echo", "raw-echo", "spin", "typed-echo"}}},
		{"unknown agent", Call{SkillID: "echo", Agent: "ghost"}, fault.AgentNotFound, fault.ReasonUnknownAgent,
			`unknown agent "ghost"; available: exec, other`,
			map[string]any{"available": []string{"exec", "other"}}},
		{"skill of another agent", Call{SkillID: "echo", Agent: "other"}, fault.InvalidParams, fault.ReasonUnknownSkill,
			`unknown skill "echo"; available: other-echo`,
			map[string]any{"available": []string{"other-echo"}, "agent_id": "other"}},
		{"output schema", Call{SkillID: "typed-echo", Input: []byte(`{"x":1}`)}, fault.SkillFailed, fault.ReasonOutputSchema,
			"skill typed-echo: output does not match output_schema: at (root): missing property 'result'",
			map[string]any{"pointer": "", "skill_id": "typed-echo", "plugin": "exec"}},
		{"trap", Call{SkillID: "crash"}, fault.SkillFailed, fault.ReasonTrap, "", nil},
	}
	// the invocation's session and request id attribute the error
	invoked := map[string]auth.Invocation{"empty input is {}": {SessionID: "s1", RequestID: "r1"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := r.Execute(auth.Invoke(context.Background(), invoked[tt.name]), tt.call)
			fe := testutil.MustFault(t, err, tt.kind, tt.reason)
			// a resolved skill's failure says so to the caller: the observer heard of it
			p, sk, ok := Reached(err)
			if want := fe.Data["plugin"] != nil; ok != want || (ok && (p != fe.Data["plugin"] || sk != tt.call.SkillID)) {
				t.Errorf("Reached = %q, %q, %v; want the skill's plugin: %v", p, sk, ok, want)
			}
			if tt.msg != "" && fe.Msg != tt.msg {
				t.Errorf("message\n got: %s\nwant: %s", fe.Msg, tt.msg)
			}
			if tt.data != nil {
				if diff := cmp.Diff(tt.data, fe.Data); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestExecuteSuccess(t *testing.T) {
	t.Parallel()
	r := newExecRegistry(t)
	ctx := context.Background()
	out, err := r.Execute(ctx, Call{SkillID: "echo", Agent: "exec", Input: []byte(`{"text":"hé"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Output) != `{"text":"hé"}` || out.Plugin != "exec" {
		t.Errorf("outcome %+v, output %q", out, out.Output)
	}
	// Inputs that are JSON but not objects reach skills without a schema.
	out, err = r.Execute(ctx, Call{SkillID: "raw-echo", Input: []byte(` [1, 2] `)})
	if err != nil || string(out.Output) != ` [1, 2] ` {
		t.Errorf("raw-echo = %q, %v", out.Output, err)
	}
}

func TestUnknownSkillListIsTruncated(t *testing.T) {
	t.Parallel()
	var skills strings.Builder
	for i := range 30 {
		fmt.Fprintf(&skills, "  - {id: s%02d, description: d, function: echo}\n", i)
	}
	root := t.TempDir()
	pluginSpec{name: "many", skills: skills.String()}.write(t, root)
	r := newTestRegistry(t, config.Policy{})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	_, err := r.Execute(context.Background(), Call{SkillID: strings.Repeat("x", 1000)})
	fe := testutil.MustFault(t, err, fault.InvalidParams, fault.ReasonUnknownSkill)
	if !strings.HasSuffix(fe.Msg, "s19 (and 10 more)") || len(fe.Msg) > 400 {
		t.Errorf("message not truncated: %q", fe.Msg)
	}
	if got := fe.Data["available"].([]string); len(got) != maxListed {
		t.Errorf("available lists %d ids", len(got))
	}
}

func TestExecuteTimeoutIsTheSmallerOfParamAndLimit(t *testing.T) {
	t.Parallel()
	r := newExecRegistry(t) // spin's limit: 400ms
	tests := []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"param smaller", 100 * time.Millisecond, 100 * time.Millisecond},
		{"limit smaller", time.Minute, 400 * time.Millisecond},
		{"no param", 0, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := r.Execute(context.Background(), Call{SkillID: "spin", Timeout: tt.timeout})
			fe := testutil.MustFault(t, err, fault.Timeout, fault.ReasonTimeout)
			if got, _ := fe.Data["timeout_ms"].(int64); got != tt.want.Milliseconds() {
				t.Errorf("applied deadline %vms (data %v), want %v", got, fe.Data["timeout_ms"], tt.want)
			}
			if took := time.Since(start); took > tt.want+5*time.Second {
				t.Errorf("the loop ran %v, far past its %v deadline", took, tt.want)
			}
		})
	}
}

type callerKey struct{}

// TestCallerContextReachesHostFunctions: what the caller attaches to ctx
// before Execute is what the plugin's host functions see.
func TestCallerContextReachesHostFunctions(t *testing.T) {
	t.Parallel()
	seen := make(chan any, 1)
	probe := extism.NewHostFunctionWithStack("probe", func(ctx context.Context, _ *extism.CurrentPlugin, _ []uint64) {
		seen <- ctx.Value(callerKey{})
	}, nil, nil)
	probe.SetNamespace("extism:host/user")
	root := t.TempDir()
	pluginSpec{name: "probe", module: "hostcall", skills: "  - {id: probe, description: d}\n"}.write(t, root)
	rt, err := sandbox.NewRuntime(context.Background(), sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	r := NewRegistry(rt, RegistryOptions{Logger: slog.New(slog.DiscardHandler), HostFunctions: func(m *Manifest, _ *Registry) []extism.HostFunction {
		asked = append(asked, m.Name)
		return []extism.HostFunction{probe}
	}})
	t.Cleanup(func() { _ = r.Close(context.Background()); _ = rt.Close(context.Background()) })
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	_, err = r.Execute(context.WithValue(context.Background(), callerKey{}, "attached"), Call{SkillID: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	if got := <-seen; got != "attached" || !cmp.Equal(asked, []string{"probe"}) {
		t.Errorf("host function saw %v; HostFunctions asked for %v", got, asked)
	}
}
