package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/skillhost/skillhost/host/internal/hostpattern"
)

// minMemory is one wasm page: the smallest memory limit there is.
const minMemory = 64 * KiB

// Limits are per-plugin resource limits. In a manifest (`limits:`) they are
// requests; in Policy.DefaultLimits they fill what a manifest leaves out. A zero field
// means "not set".
type Limits struct {
	Timeout     time.Duration `koanf:"timeout"`     // per call
	Memory      ByteSize      `koanf:"memory"`      // linear memory cap
	Output      ByteSize      `koanf:"output"`      // max output bytes
	Concurrency int           `koanf:"concurrency"` // max parallel instances
	// MinInstances are instances kept warm at all times (they hold the
	// plugin's compiled code resident too); others are created on demand
	// and closed after policy.idle_timeout unused.
	MinInstances int `koanf:"min_instances"`
}

// Policy is the operator's cap on what plugins may request. It is read from
// the `policy:` config section (the koanf tags are the YAML keys). Zero fields
// take the defaults of DefaultPolicy.
type Policy struct {
	// MaxTimeout caps limits.timeout. Default: 30s.
	MaxTimeout time.Duration `koanf:"max_timeout"`
	// MaxMemory caps limits.memory. Default: 256MiB.
	MaxMemory ByteSize `koanf:"max_memory"`
	// MaxOutput caps limits.output. Default: 16MiB.
	MaxOutput ByteSize `koanf:"max_output"`
	// MaxConcurrency caps limits.concurrency. Default: 16.
	MaxConcurrency int `koanf:"max_concurrency"`
	// DefaultLimits fill what a manifest does not request.
	// Default: timeout 2s, memory 64MiB, output 1MiB, concurrency 4.
	DefaultLimits Limits `koanf:"default_limits"`
	// AllowedHostPatterns lists what permissions.allowed_hosts may ask for:
	// exact hosts or "*.suffix" patterns, each optionally with ":port" (a
	// pattern without one covers requests without one, which reach the
	// default ports 80 and 443 only), or "*" for any host and port.
	// Default: none, so a plugin requesting network access is refused.
	AllowedHostPatterns []string `koanf:"allowed_host_patterns"`
	// AllowedPathPrefixes lists host directories under which
	// permissions.allowed_paths may mount. Default: none, so a plugin
	// requesting a mount is refused.
	AllowedPathPrefixes []string `koanf:"allowed_path_prefixes"`
	// AllowedAgentPatterns lists what permissions.agents may ask for:
	// agent ids with "*" wildcards (billing, text-*), or "*" for any agent.
	// Default: none, so a plugin asking to call agents is refused.
	AllowedAgentPatterns []string `koanf:"allowed_agent_patterns"`
	// AllowWritablePaths permits ":rw" mounts. Default: false.
	AllowWritablePaths bool `koanf:"allow_writable_paths"`
	// MaxModuleBytes caps the .wasm size, checked before it is read.
	// Default: 64MiB.
	MaxModuleBytes ByteSize `koanf:"max_module_bytes"`
	// MaxMinInstances caps limits.min_instances: the instances a plugin may
	// ask to keep warm while nobody calls it. Default: 0 (none may).
	MaxMinInstances int `koanf:"max_min_instances"`
	// IdleTimeout is how long an instance nobody calls stays alive (down to
	// the plugin's min_instances); a plugin left with no instance then
	// releases its compiled code too, which its next call loads again from
	// the compilation cache. Default: 60s.
	IdleTimeout time.Duration `koanf:"idle_timeout"`
	// QueueWait is how long a call waits for a free instance before failing
	// with pool_saturated. Default: 100ms.
	QueueWait time.Duration `koanf:"queue_wait"`
	// SkillRates limit how often skills may be called, per key or for all
	// callers together (see SkillRate). Every rule matching a skill
	// applies. Default: none.
	SkillRates []SkillRate `koanf:"skill_rates"`
}

// DefaultPolicy returns the defaults documented on Policy.
func DefaultPolicy() Policy {
	return Policy{
		MaxTimeout:     30 * time.Second,
		MaxMemory:      256 * MiB,
		MaxOutput:      16 * MiB,
		MaxConcurrency: 16,
		DefaultLimits:  Limits{Timeout: 2 * time.Second, Memory: 64 * MiB, Output: 1 * MiB, Concurrency: 4},
		MaxModuleBytes: 64 * MiB,
		IdleTimeout:    60 * time.Second,
		QueueWait:      100 * time.Millisecond,
		SkillRates:     []SkillRate{},
	}
}

// WithDefaults returns p with every zero field set from DefaultPolicy.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	setIfZero(&p.MaxTimeout, d.MaxTimeout)
	setIfZero(&p.MaxMemory, d.MaxMemory)
	setIfZero(&p.MaxOutput, d.MaxOutput)
	setIfZero(&p.MaxConcurrency, d.MaxConcurrency)
	setIfZero(&p.DefaultLimits.Timeout, min(d.DefaultLimits.Timeout, p.MaxTimeout))
	setIfZero(&p.DefaultLimits.Memory, min(d.DefaultLimits.Memory, p.MaxMemory))
	setIfZero(&p.DefaultLimits.Output, min(d.DefaultLimits.Output, p.MaxOutput))
	setIfZero(&p.DefaultLimits.Concurrency, min(d.DefaultLimits.Concurrency, p.MaxConcurrency))
	setIfZero(&p.MaxModuleBytes, d.MaxModuleBytes)
	setIfZero(&p.IdleTimeout, d.IdleTimeout)
	setIfZero(&p.QueueWait, d.QueueWait)
	return p
}

// agentPattern is the grammar of agent patterns: agent ids with "*".
var agentPattern = regexp.MustCompile(`^[a-z0-9*][a-z0-9*-]{0,63}$`)

// ValidAgentPattern reports whether p is an agent id with "*" wildcards
// (permissions.agents, policy.allowed_agent_patterns).
func ValidAgentPattern(p string) bool { return agentPattern.MatchString(p) }

func setIfZero[T comparable](dst *T, v T) {
	var zero T
	if *dst == zero {
		*dst = v
	}
}

// Validate reports a policy that contradicts itself (defaults above the
// maxima, malformed patterns). It validates p.WithDefaults().
func (p Policy) Validate() error {
	p = p.WithDefaults()
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("policy.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if p.MaxTimeout < 0 || p.DefaultLimits.Timeout < 0 || p.QueueWait < 0 || p.IdleTimeout < 0 {
		bad("max_timeout", "durations must not be negative")
	}
	if p.DefaultLimits.Timeout > p.MaxTimeout {
		bad("default_limits.timeout", "%v exceeds policy.max_timeout %v", p.DefaultLimits.Timeout, p.MaxTimeout)
	}
	if p.DefaultLimits.Memory > p.MaxMemory {
		bad("default_limits.memory", "%v exceeds policy.max_memory %v", p.DefaultLimits.Memory, p.MaxMemory)
	}
	if p.DefaultLimits.Memory < minMemory {
		bad("default_limits.memory", "must be at least 64KiB (one wasm page)")
	}
	if p.DefaultLimits.Output > p.MaxOutput {
		bad("default_limits.output", "%v exceeds policy.max_output %v", p.DefaultLimits.Output, p.MaxOutput)
	}
	if p.MaxConcurrency < 1 || p.DefaultLimits.Concurrency < 1 || p.DefaultLimits.Concurrency > p.MaxConcurrency {
		bad("default_limits.concurrency", "must be between 1 and policy.max_concurrency (%d)", p.MaxConcurrency)
	}
	if p.MaxMinInstances < 0 || p.MaxMinInstances > p.MaxConcurrency {
		bad("max_min_instances", "must be between 0 and policy.max_concurrency (%d)", p.MaxConcurrency)
	}
	if p.DefaultLimits.MinInstances < 0 || p.DefaultLimits.MinInstances > p.MaxMinInstances || p.DefaultLimits.MinInstances > p.DefaultLimits.Concurrency {
		bad("default_limits.min_instances", "must be between 0 and policy.max_min_instances (%d) and at most default_limits.concurrency", p.MaxMinInstances)
	}
	for i, h := range p.AllowedHostPatterns {
		if !hostpattern.Valid(strings.ToLower(h), true) {
			bad(fmt.Sprintf("allowed_host_patterns[%d]", i), "%q must be a host name or *.suffix, optionally with :port, or *", h)
		}
	}
	for i, a := range p.AllowedAgentPatterns {
		if !ValidAgentPattern(a) {
			bad(fmt.Sprintf("allowed_agent_patterns[%d]", i), "%q must be an agent id with * wildcards (text-*), or *", a)
		}
	}
	for i, pre := range p.AllowedPathPrefixes {
		if !filepath.IsAbs(pre) {
			bad(fmt.Sprintf("allowed_path_prefixes[%d]", i), "%q must be an absolute path", pre)
		}
	}
	errs = append(errs, validateSkillRates(p.SkillRates)...)
	return errors.Join(errs...)
}
