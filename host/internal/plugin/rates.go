package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// skillRates compiles policy.skill_rates (validated by Policy.Validate; a
// rule whose rate does not parse is logged and skipped).
func skillRates(p config.Policy, lim auth.Limiter, log *slog.Logger) *auth.SkillRates {
	if len(p.SkillRates) == 0 {
		return nil
	}
	rules := make([]auth.SkillRule, 0, len(p.SkillRates))
	for i, sr := range p.SkillRates {
		key := fmt.Sprintf("policy.skill_rates[%d]", i)
		rate, err := auth.ParseRate(sr.Rate)
		if err != nil || rate.Unlimited() {
			log.Error("plugin: a policy.skill_rates rule without a valid rate is ignored (call Policy.Validate first)", "rule", key, "err", err)
			continue
		}
		rules = append(rules, auth.SkillRule{Key: key, Skill: sr.Skill, Rate: rate, PerKey: sr.PerOrDefault() != config.PerAll})
	}
	return auth.NewSkillRates(lim, rules...)
}

// RateRule is a policy.skill_rates rule as the admin documents show it.
type RateRule struct {
	Limit string `json:"limit"` // its config key: policy.skill_rates[i]
	Skill string `json:"skill"` // its glob
	Rate  string `json:"rate"`
	Per   string `json:"per"` // key or all
}

// SkillRates lists the rules of policy.skill_rates that apply to the skill
// id, in the order a call takes their tokens.
func (r *Registry) SkillRates(skillID string) []RateRule {
	var out []RateRule
	for _, rule := range r.rates.Matching(skillID) {
		out = append(out, RateRule{Limit: rule.Key, Skill: rule.Skill, Rate: rule.Rate.String(), Per: rule.Per()})
	}
	return out
}

// admission is the policy.skill_rates tokens Admit took for one call of a
// skill, spent by the Execute of that call.
type admission struct {
	skill string
	spent atomic.Bool
}

type admissionKey struct{}

// Admit takes the policy.skill_rates tokens of one call of skillID by the
// principal of ctx ahead of its Execute (A2A takes them before it creates
// a task, so a refused message starts none). The returned context carries
// the admission: the first Execute of that skill under it takes no tokens
// again; any other call under it (a nested agent_call of the same skill
// included) takes its own. A refusal is reported to the Observer as a call
// of the skill, as Execute reports it. A skill that is not loaded is
// admitted: Execute reports it.
func (r *Registry) Admit(ctx context.Context, skillID string) (context.Context, error) {
	if r.rates == nil {
		return ctx, nil
	}
	r.mu.RLock()
	e := r.cur.bySkill[skillID]
	r.mu.RUnlock()
	if e == nil {
		return ctx, nil
	}
	sk, _ := e.plugin.Skill(skillID)
	start := time.Now()
	if err := r.rates.Admit(auth.From(ctx), skillID); err != nil {
		fe := annotate(ctx, fault.From(err), Call{SkillID: skillID}, e.plugin)
		r.observe(ctx, e.plugin, sk, start, nil, fe)
		return ctx, markReached(fe, e.plugin, sk)
	}
	return context.WithValue(ctx, admissionKey{}, &admission{skill: skillID}), nil
}

// takeRate takes the policy.skill_rates tokens of one call of sk, unless
// Admit took them for this call.
func (r *Registry) takeRate(ctx context.Context, sk *Skill) error {
	if r.rates == nil {
		return nil
	}
	if a, ok := ctx.Value(admissionKey{}).(*admission); ok && a.skill == sk.ID && a.spent.CompareAndSwap(false, true) {
		return nil
	}
	return r.rates.Admit(auth.From(ctx), sk.ID)
}
