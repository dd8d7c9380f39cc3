package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// A per-key rule refuses a key past its rate while another key is still
// served; a per-all rule refuses everyone past it; per-key rules are taken
// first, so a key past its own rate leaves the shared bucket alone.
func TestSkillRates(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t,
		auth.KeySpec{ID: "a", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}},
		auth.KeySpec{ID: "b", SHA256: auth.Digest(textKey), Scopes: []string{"*"}})
	authn := auth.NewAuthenticator(ks, nil)
	a, err := authn.Authenticate(context.Background(), ciKey)
	if err != nil {
		t.Fatal(err)
	}
	b, err := authn.Authenticate(context.Background(), textKey)
	if err != nil {
		t.Fatal(err)
	}
	hour := auth.Rate{N: 2, Period: time.Hour}
	one := auth.Rate{N: 1, Period: time.Hour}
	type call struct {
		who   auth.Principal
		skill string
	}
	tests := []struct {
		name  string
		rules []auth.SkillRule
		calls []call
		want  []string // "" served, else the refusing rule's key
	}{
		{"per key: A past its rate, B still served",
			[]auth.SkillRule{{Key: "policy.skill_rates[0]", Skill: "echo", Rate: hour, PerKey: true}},
			[]call{{a, "echo"}, {a, "echo"}, {a, "echo"}, {b, "echo"}, {b, "echo"}, {b, "echo"}},
			[]string{"", "", "policy.skill_rates[0]", "", "", "policy.skill_rates[0]"}},
		{"per all: everyone past it",
			[]auth.SkillRule{{Key: "policy.skill_rates[0]", Skill: "echo", Rate: hour}},
			[]call{{a, "echo"}, {b, "echo"}, {a, "echo"}, {b, "echo"}},
			[]string{"", "", "policy.skill_rates[0]", "policy.skill_rates[0]"}},
		{"a glob gives each skill its own bucket; others unlimited",
			[]auth.SkillRule{{Key: "policy.skill_rates[0]", Skill: "text-*", Rate: one}},
			[]call{{a, "text-upper"}, {a, "text-lower"}, {a, "text-upper"}, {a, "echo"}, {a, "echo"}},
			[]string{"", "", "policy.skill_rates[0]", "", ""}},
		{"per key before per all: a key past its own rate leaves the shared bucket",
			[]auth.SkillRule{{Key: "policy.skill_rates[0]", Skill: "*", Rate: hour}, {Key: "policy.skill_rates[1]", Skill: "echo", Rate: one, PerKey: true}},
			[]call{{a, "echo"}, {a, "echo"}, {a, "echo"}, {b, "echo"}, {auth.Local("stdio"), "echo"}},
			[]string{"", "policy.skill_rates[1]", "policy.skill_rates[1]", "", "policy.skill_rates[0]"}},
		{"local principals and calls without one each count as one caller",
			[]auth.SkillRule{{Key: "policy.skill_rates[0]", Skill: "echo", Rate: one, PerKey: true}},
			[]call{{auth.Local("stdio"), "echo"}, {auth.Local("stdio"), "echo"}, {auth.Principal{}, "echo"}, {auth.Principal{}, "echo"}, {a, "echo"}},
			[]string{"", "policy.skill_rates[0]", "", "policy.skill_rates[0]", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rates := auth.NewSkillRates(nil, tt.rules...)
			var got []string
			for _, c := range tt.calls {
				err := rates.Admit(c.who, c.skill)
				if err == nil {
					got = append(got, "")
					continue
				}
				fe := fault.From(err)
				if fe.Kind != fault.ResourceExhausted || fe.Reason != fault.ReasonRateLimited {
					t.Fatalf("refusal %v/%s, want ResourceExhausted/rate_limited", fe.Kind, fe.Reason)
				}
				got = append(got, fe.Data["limit"].(string))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// The refusal names the skill, the rule and its config key, and when to
// retry (the HTTP adapter's Retry-After).
func TestSkillRateRefusal(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, auth.KeySpec{ID: "a", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}})
	a, err := auth.NewAuthenticator(ks, nil).Authenticate(context.Background(), ciKey)
	if err != nil {
		t.Fatal(err)
	}
	rates := auth.NewSkillRates(nil, auth.SkillRule{Key: "policy.skill_rates[3]", Skill: "ech*", Rate: auth.Rate{N: 1, Period: time.Hour}, PerKey: true})
	if err := rates.Admit(a, "echo"); err != nil {
		t.Fatal(err)
	}
	fe := fault.From(rates.Admit(a, "echo"))
	retry, after := fe.Data["retry_after_ms"].(int64), auth.RetryAfter(fe)
	delete(fe.Data, "retry_after_ms")
	want := map[string]any{"limit": "policy.skill_rates[3]", "rule": "ech*", "rate": "1/h", "per": "key", "key_id": "a"}
	if diff := cmp.Diff(want, fe.Data); diff != "" {
		t.Errorf("refusal data (-want +got):\n%s", diff)
	}
	if retry < 59*60*1000 || after <= 59*time.Minute {
		t.Errorf("retry_after_ms = %d, want about an hour", retry)
	}
	for _, part := range []string{`skill "echo"`, "1/h per key", "policy.skill_rates[3]"} {
		if !strings.Contains(fe.Message(), part) {
			t.Errorf("message %q does not name %s", fe.Message(), part)
		}
	}
	var none *auth.SkillRates
	if err := none.Admit(a, "echo"); err != nil || none.Matching("echo") != nil {
		t.Errorf("nil SkillRates limited a call: %v", err)
	}
}
