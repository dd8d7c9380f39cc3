package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
)

// policy.skill_rates loads from the file as written, per defaulting to key.
func TestLoadSkillRates(t *testing.T) {
	t.Parallel()
	file := writeFile(t, `policy:
  skill_rates:
    - {skill: "translate-*", rate: 10/s}
    - {skill: "*", rate: 600/m, per: all}
`)
	cfg, err := config.Load(config.Sources{File: file, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	want := []config.SkillRate{{Skill: "translate-*", Rate: "10/s"}, {Skill: "*", Rate: "600/m", Per: "all"}}
	if diff := cmp.Diff(want, cfg.Policy.SkillRates); diff != "" {
		t.Errorf("policy.skill_rates (-want +got):\n%s", diff)
	}
	if got := cfg.Policy.SkillRates[0].PerOrDefault(); got != config.PerKey {
		t.Errorf("per of a rule without one = %q, want key", got)
	}
}

// Every malformed rule is refused, naming the rule's key.
func TestLoadRejectsSkillRates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, rules, want string
	}{
		{"unknown item key", `[{skil: echo, rate: 1/s}]`, "policy.skill_rates[0]: unknown key(s) skil (did you mean skill?)"},
		{"missing rate", `[{skill: echo}]`, "policy.skill_rates[0].rate: is required"},
		{"bad rate", `[{skill: echo, rate: 10/d}]`, "policy.skill_rates[0].rate: rate \"10/d\": the period must be s, m or h"},
		{"zero rate", `[{skill: echo, rate: 0/s}]`, "policy.skill_rates[0].rate"},
		{"missing skill", `[{rate: 1/s}]`, "policy.skill_rates[0].skill"},
		{"skill with a space", `[{skill: "a b", rate: 1/s}]`, "policy.skill_rates[0].skill: \"a b\" must be a skill id"},
		{"upper-case skill", `[{skill: Echo, rate: 1/s}]`, "policy.skill_rates[0].skill"},
		{"bad per", `[{skill: echo, rate: 1/s}, {skill: echo, rate: 1/s, per: host}]`, "policy.skill_rates[1].per: \"host\" must be key or all"},
		{"too many", "[" + strings.Repeat("{skill: e, rate: 1/s},", 65) + "]", "policy.skill_rates: 65 rules; at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Load(config.Sources{File: writeFile(t, "policy:\n  skill_rates: "+tt.rules+"\n"), Environ: []string{}})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
