package auth

import (
	"fmt"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// SkillRule is one operator rule of policy.skill_rates: every skill whose
// id matches Skill gets its own token bucket of Rate, one per principal
// owner (PerKey) or one that every caller shares.
type SkillRule struct {
	// Key is the rule's configuration key, "policy.skill_rates[2]": the
	// limit error data name.
	Key string
	// Skill is a glob over skill ids (Match).
	Skill  string
	Rate   Rate
	PerKey bool
}

// Per is "key" or "all", as written in configuration.
func (r SkillRule) Per() string {
	if r.PerKey {
		return "key"
	}
	return "all"
}

// SkillRates applies the SkillRules to skill calls, taking tokens from a
// Limiter. Bucket names are built from rule keys, loaded skill ids and
// principal owners (configured keys, the few local principals), so their
// number is bounded by the configuration and the plugins. Safe for
// concurrent use; the zero value and nil limit nothing.
type SkillRates struct {
	lim   Limiter
	rules []SkillRule // per-key rules first, then per-all, each in configuration order
}

// NewSkillRates returns the rules applied with lim (nil: a MemoryLimiter).
// Unlimited rules are dropped.
func NewSkillRates(lim Limiter, rules ...SkillRule) *SkillRates {
	if lim == nil {
		lim = NewMemoryLimiter()
	}
	s := &SkillRates{lim: lim}
	for _, perKey := range []bool{true, false} {
		for _, r := range rules {
			if r.PerKey == perKey && !r.Rate.Unlimited() {
				s.rules = append(s.rules, r)
			}
		}
	}
	return s
}

// Matching are the rules that apply to skill, in the order Admit takes
// their tokens.
func (s *SkillRates) Matching(skill string) []SkillRule {
	if s == nil {
		return nil
	}
	var out []SkillRule
	for _, r := range s.rules {
		if Match(r.Skill, skill) {
			out = append(out, r)
		}
	}
	return out
}

// Admit takes a token of every rule matching skill for one call by p: its
// owner's bucket for a per-key rule (a session token shares its key's; a
// call without a principal counts as one anonymous caller), the shared
// bucket for a per-all rule. Per-key rules go first, so a key past its own
// rate takes nothing from what it shares with others. The first rule
// without a token refuses the call: ResourceExhausted rate_limited whose
// data name the rule (limit: its config key, rule: its glob, rate, per)
// and retry_after_ms.
func (s *SkillRates) Admit(p Principal, skill string) error {
	if s == nil {
		return nil
	}
	for _, r := range s.rules {
		if !Match(r.Skill, skill) {
			continue
		}
		bucket := "skill:" + r.Key + ":" + skill
		if r.PerKey {
			bucket += ":" + p.Owner()
		}
		ok, wait := s.lim.Take(bucket, r.Rate)
		if ok {
			continue
		}
		who := "by all callers together"
		if r.PerKey {
			who = "per key"
		}
		round := 10 * time.Millisecond
		if wait > time.Minute {
			round = time.Second
		}
		fe := fault.Newf(fault.ResourceExhausted, fault.ReasonRateLimited,
			"skill %q may be called %s %s (rule %q, %s); retry in %s", clip(skill), r.Rate, who, r.Skill, r.Key, wait.Round(round)).
			With("limit", r.Key).With("rule", r.Skill).With("rate", r.Rate.String()).With("per", r.Per()).
			With("retry_after_ms", max(wait.Milliseconds(), 1))
		if r.PerKey && p.KeyID() != "" {
			fe = fe.With("key_id", p.KeyID())
		}
		return fe
	}
	return nil
}

// String describes the rule for operators: "10/s per key (translate-*)",
// "500/s in all (*)".
func (r SkillRule) String() string {
	who := "in all"
	if r.PerKey {
		who = "per key"
	}
	return fmt.Sprintf("%s %s (%s)", r.Rate, who, r.Skill)
}
