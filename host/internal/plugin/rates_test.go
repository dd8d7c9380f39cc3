package plugin

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// newRatedRegistry loads the exec test plugin under policy.skill_rates
// rules, with a recorder watching the calls.
func newRatedRegistry(t *testing.T, rules ...config.SkillRate) (*Registry, *recorder) {
	t.Helper()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	obs := &recorder{}
	r := NewRegistry(rt, RegistryOptions{Policy: config.Policy{SkillRates: rules}, Observer: obs,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() {
		_ = r.Close(ctx)
		_ = rt.Close(ctx)
	})
	root := t.TempDir()
	pluginSpec{name: "exec", skills: execSkills}.write(t, root)
	if err := r.LoadDir(ctx, root); err != nil {
		t.Fatal(err)
	}
	return r, obs
}

// Execute takes a token of each matching rule; a call past the rate is
// refused rate_limited (reported to the observer like any call of the
// skill), and a skill no rule matches is not limited.
func TestExecuteSkillRates(t *testing.T) {
	t.Parallel()
	r, obs := newRatedRegistry(t, config.SkillRate{Skill: "*echo", Rate: "2/h", Per: "all"})
	ctx := auth.With(context.Background(), auth.Local("test"))
	var got []string
	for _, skill := range []string{"raw-echo", "raw-echo", "raw-echo", "typed-echo", "crash"} {
		_, err := r.Execute(ctx, Call{SkillID: skill, Input: []byte(`{"text":"hi"}`)})
		got = append(got, skill+" "+reasonOf(err))
	}
	want := []string{"raw-echo ", "raw-echo ", "raw-echo rate_limited", "typed-echo output_schema", "crash trap"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	_, calls := obs.take()
	if diff := cmp.Diff([]string{"exec/raw-echo ok", "exec/raw-echo ok", "exec/raw-echo rate_limited", "exec/typed-echo output_schema", "exec/crash trap"}, calls); diff != "" {
		t.Errorf("observed calls (-want +got):\n%s", diff)
	}
	_, err := r.Execute(auth.Invoke(ctx, auth.Invocation{SessionID: "s1"}), Call{SkillID: "raw-echo"})
	fe := fault.From(err)
	for k, v := range map[string]any{"limit": "policy.skill_rates[0]", "rule": "*echo", "per": "all", "skill_id": "raw-echo", "plugin": "exec", "session_id": "s1"} {
		if fe.Data[k] != v {
			t.Errorf("refusal data %s = %v, want %v (%v)", k, fe.Data[k], v, fe.Data)
		}
	}
	if diff := cmp.Diff([]RateRule{{Limit: "policy.skill_rates[0]", Skill: "*echo", Rate: "2/h", Per: "all"}}, r.SkillRates("raw-echo")); diff != "" {
		t.Errorf("SkillRates (-want +got):\n%s", diff)
	}
	if got := r.SkillRates("crash"); got != nil {
		t.Errorf("SkillRates of an unlimited skill = %v", got)
	}
}

// Admit takes the tokens of one call ahead of its Execute, which then
// takes none; a second Execute under the same context takes its own.
func TestAdmitSkillRate(t *testing.T) {
	t.Parallel()
	r, obs := newRatedRegistry(t, config.SkillRate{Skill: "raw-echo", Rate: "2/h"})
	ctx, err := r.Admit(auth.With(context.Background(), auth.Local("test")), "raw-echo")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"", "", "rate_limited"} { // the admitted call, one more token, none left
		if _, err := r.Execute(ctx, Call{SkillID: "raw-echo"}); reasonOf(err) != want {
			t.Errorf("call %d after Admit: %v, want %q", i, err, want)
		}
	}
	_, err = r.Admit(ctx, "raw-echo")
	if fe := fault.From(err); fe.Reason != fault.ReasonRateLimited || fe.Data["plugin"] != "exec" {
		t.Errorf("Admit past the rate = %v, want rate_limited naming the plugin", err)
	}
	if _, calls := obs.take(); len(calls) != 4 || calls[3] != "exec/raw-echo rate_limited" {
		t.Errorf("observed %v; want the refused Admit reported as a call", calls)
	}
	if _, err := r.Admit(ctx, "no-such-skill"); err != nil {
		t.Errorf("Admit of an unknown skill: %v (Execute reports it)", err)
	}
}

// reasonOf is err's wire reason; "" for nil.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	return fault.From(err).WireReason()
}
