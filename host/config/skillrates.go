package config

import (
	"fmt"
	"regexp"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// The values of SkillRate.Per.
const (
	PerKey = "key" // each API key (its session tokens included) has its own bucket
	PerAll = "all" // every caller shares one bucket
)

// SkillRate is one policy.skill_rates rule: how often each skill whose id
// matches Skill may be called. A rule gives every matching skill its own
// token bucket (Rate tokens, refilled at Rate), one per key or one for all
// callers; a call refused by a rule fails with -32106 rate_limited.
type SkillRate struct {
	// Skill is a glob over skill ids: `*` matches any run of characters,
	// `?` one (translate-*, *). Required.
	Skill string `koanf:"skill"`
	// Rate is "N/s", "N/m" or "N/h". Required.
	Rate string `koanf:"rate"`
	// Per is "key" (each key on its own; local clients such as stdio each
	// count as one) or "all" (every caller together). Optional.
	// Default: key.
	Per string `koanf:"per"`
}

// PerOrDefault is r.Per, or PerKey when it is empty.
func (r SkillRate) PerOrDefault() string {
	if r.Per == "" {
		return PerKey
	}
	return r.Per
}

// skillGlob is the grammar of SkillRate.Skill: skill id characters and the
// wildcards.
var skillGlob = regexp.MustCompile(`^[a-z0-9_*?-]{1,128}$`)

// maxSkillRates caps policy.skill_rates: each rule is checked on every call.
const maxSkillRates = 64

func validateSkillRates(rules []SkillRate) []error {
	var errs []error
	if len(rules) > maxSkillRates {
		errs = append(errs, fmt.Errorf("policy.skill_rates: %d rules; at most %d", len(rules), maxSkillRates))
	}
	for i, r := range rules {
		key := fmt.Sprintf("policy.skill_rates[%d]", i)
		if !skillGlob.MatchString(r.Skill) {
			errs = append(errs, fmt.Errorf("%s.skill: %q must be a skill id with * or ? wildcards (translate-*, *), 1..128 characters", key, clipValue(r.Skill)))
		}
		if r.Rate == "" {
			errs = append(errs, fmt.Errorf("%s.rate: is required (N/s, N/m or N/h)", key))
		} else if _, err := auth.ParseRate(r.Rate); err != nil {
			errs = append(errs, fmt.Errorf("%s.rate: %w", key, err))
		}
		switch r.Per {
		case "", PerKey, PerAll:
		default:
			errs = append(errs, fmt.Errorf("%s.per: %q must be key or all", key, clipValue(r.Per)))
		}
	}
	return errs
}
