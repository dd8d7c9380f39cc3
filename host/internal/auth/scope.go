package auth

import (
	"fmt"
	"strings"
)

// ScopeKind is what a scope grants.
type ScopeKind uint8

// The scope kinds, as written in auth.keys[].scopes.
const (
	ScopeAll    ScopeKind = iota + 1 // "*": everything
	ScopeSkill                       // "skill:<glob>": running matching skills
	ScopeAgent                       // "agent:<glob>": calling matching agents (every skill of a matching plugin)
	ScopeMethod                      // "method:<glob>": calling matching methods
)

// maxScopeBytes bounds one scope string.
const maxScopeBytes = 256

// Scope is one parsed entry of a key's scopes.
type Scope struct {
	Kind ScopeKind
	Glob string // "" for ScopeAll
}

// ParseScope parses "*", "skill:<glob>", "agent:<glob>" or "method:<glob>".
// A glob is printable ASCII without spaces; `*` matches any run of
// characters (slashes included) and `?` exactly one.
func ParseScope(s string) (Scope, error) {
	if s == "*" {
		return Scope{Kind: ScopeAll}, nil
	}
	prefix, glob, ok := strings.Cut(s, ":")
	var kind ScopeKind
	switch prefix {
	case "skill":
		kind = ScopeSkill
	case "agent":
		kind = ScopeAgent
	case "method":
		kind = ScopeMethod
	default:
		ok = false
	}
	if !ok {
		return Scope{}, fmt.Errorf("scope %q: want \"*\", \"skill:<glob>\", \"agent:<glob>\" or \"method:<glob>\"", clip(s))
	}
	if glob == "" || len(s) > maxScopeBytes {
		return Scope{}, fmt.Errorf("scope %q: the pattern must be 1..%d bytes", clip(s), maxScopeBytes-len(prefix)-1)
	}
	for i := range len(glob) {
		if glob[i] <= ' ' || glob[i] > '~' {
			return Scope{}, fmt.Errorf("scope %q: the pattern may contain only printable ASCII without spaces", clip(s))
		}
	}
	return Scope{Kind: kind, Glob: glob}, nil
}

// String is the scope as written in configuration.
func (s Scope) String() string {
	switch s.Kind {
	case ScopeAll:
		return "*"
	case ScopeSkill:
		return "skill:" + s.Glob
	case ScopeAgent:
		return "agent:" + s.Glob
	case ScopeMethod:
		return "method:" + s.Glob
	}
	return ""
}

// Match reports whether glob matches name: `*` matches any run of bytes
// (including none and including '/'), `?` exactly one byte, anything else
// itself. Matching is iterative with one backtrack point, so its cost is
// O(len(glob)·len(name)) at worst, whatever the pattern.
func Match(glob, name string) bool {
	g, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case g < len(glob) && (glob[g] == '?' || glob[g] == name[n]):
			g++
			n++
		case g < len(glob) && glob[g] == '*':
			star, mark = g, n
			g++
		case star >= 0:
			g = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for g < len(glob) && glob[g] == '*' {
		g++
	}
	return g == len(glob)
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
