package plugin

import (
	"fmt"
	"strings"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostpattern"
)

// policy is the operator's config.Policy with the checks the registry
// applies to a manifest; its zero fields are filled with the defaults.
type policy struct{ config.Policy }

func newPolicy(p config.Policy) policy { return policy{p.WithDefaults()} }

// Check refuses a manifest that asks for more than the policy p allows and
// returns its effective limits: the requests, with the policy defaults
// filling what the manifest leaves out. Errors name the manifest file and
// field. Requested host paths are resolved through symlinks before they are
// compared with the allowed prefixes.
func Check(p config.Policy, m *Manifest) (config.Limits, error) { return newPolicy(p).check(m) }

func (p policy) check(m *Manifest) (config.Limits, error) {
	v := &validator{file: m.File}
	req, eff := m.Limits, p.DefaultLimits
	if req.Timeout > 0 {
		if req.Timeout > p.MaxTimeout {
			v.add("limits.timeout", "%v exceeds the operator's max %v", req.Timeout, p.MaxTimeout)
		}
		eff.Timeout = req.Timeout
	}
	if req.Memory > 0 {
		if req.Memory > p.MaxMemory {
			v.add("limits.memory", "%v exceeds the operator's max %v", req.Memory, p.MaxMemory)
		}
		eff.Memory = req.Memory
	}
	if req.Output > 0 {
		if req.Output > p.MaxOutput {
			v.add("limits.output", "%v exceeds the operator's max %v", req.Output, p.MaxOutput)
		}
		eff.Output = req.Output
	}
	if req.Concurrency > 0 {
		if req.Concurrency > p.MaxConcurrency {
			v.add("limits.concurrency", "%d exceeds the operator's max %d", req.Concurrency, p.MaxConcurrency)
		}
		eff.Concurrency = req.Concurrency
	}
	if req.MinInstances > 0 {
		if req.MinInstances > p.MaxMinInstances {
			v.add("limits.min_instances", "%d exceeds the operator's max %d (policy.max_min_instances)", req.MinInstances, p.MaxMinInstances)
		}
		eff.MinInstances = req.MinInstances
	}
	if eff.MinInstances > eff.Concurrency {
		v.add("limits.min_instances", "%d exceeds limits.concurrency %d", eff.MinInstances, eff.Concurrency)
	}
	for i, h := range m.Permissions.AllowedHosts {
		if !p.hostAllowed(h) {
			v.add(fmt.Sprintf("permissions.allowed_hosts[%d]", i), "%q is not allowed by the operator's policy (policy.allowed_host_patterns)", h)
		}
	}
	for i, a := range m.Permissions.Agents {
		if !p.agentAllowed(a) {
			v.add(fmt.Sprintf("permissions.agents[%d]", i), "%q is not allowed by the operator's policy (policy.allowed_agent_patterns)", a)
		}
	}
	for _, g := range m.Permissions.AllowedPaths {
		field := fmt.Sprintf("permissions.allowed_paths[%q]", g.GuestPath)
		if g.Writable && !p.AllowWritablePaths {
			v.add(field, "read-write mount refused: policy.allow_writable_paths is false")
		}
		if err := p.pathAllowed(g.HostPath); err != nil {
			v.add(field, "%v", err)
		}
	}
	return eff, v.err()
}

func (p policy) hostAllowed(h string) bool {
	for _, pat := range p.AllowedHostPatterns {
		if hostpattern.Covers(strings.ToLower(pat), h) {
			return true
		}
	}
	return false
}

// agentAllowed reports whether a policy pattern covers the manifest
// pattern a: a policy pattern matching a's text, its "*" read as a literal
// character, matches every id a matches (patterns have no "?").
func (p policy) agentAllowed(a string) bool {
	for _, pat := range p.AllowedAgentPatterns {
		if auth.Match(pat, a) {
			return true
		}
	}
	return false
}

func (p policy) pathAllowed(host string) error {
	_, _, err := p.resolveMount(host)
	return err
}
