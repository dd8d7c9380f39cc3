package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"
)

// nearest returns the known key closest to key by edit distance, or ""
// when none is close enough to be a likely typo (at most a third of the
// key's length, and never more than 4 edits). Separators count as equal,
// so "http_read_timeout" finds "http.read_timeout".
func nearest(key string, known map[string]bool) string {
	norm := func(s string) string { return strings.ReplaceAll(s, ".", "_") }
	best, bestDist := "", min(4, max(1, len(key)/3))+1
	cands := make([]string, 0, len(known))
	for k := range known {
		cands = append(cands, k)
	}
	sort.Strings(cands) // ties go to the first in order, for stable messages
	for _, k := range cands {
		if d := levenshtein.ComputeDistance(norm(key), norm(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// replacedKeys are keys an earlier version had, with what replaced them.
var replacedKeys = map[string]string{
	"policy.warm_instances": "replaced: instances are created on demand and closed after policy.idle_timeout; " +
		"a plugin asks to stay warm with limits.min_instances, capped by policy.max_min_instances",
}

// checkKeys refuses keys the configuration does not have, suggesting the
// nearest known key for each. name renders a key as the layer spells it.
func checkKeys(keys []string, known map[string]bool, where string, name func(string) string) error {
	var unknown []string
	for _, key := range keys {
		if known[key] {
			continue
		}
		msg := key
		if spelled := name(key); spelled != key {
			msg += " (" + spelled + ")"
		}
		if hint, ok := replacedKeys[key]; ok {
			msg += " (" + hint + ")"
		} else if near := nearest(key, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", name(near))
		}
		unknown = append(unknown, msg)
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("config %s: unknown key(s) %s (see the configuration table in docs/reference/config.md)", where, strings.Join(unknown, ", "))
}

// fileKey spells a key as a YAML file does.
func fileKey(key string) string { return key }

// envName spells a key as an environment variable.
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// flagName spells a key as a command-line flag.
func flagName(key string) string { return "--" + key }

// flagKey is the config key a flag sets: its name with "-" as "_"
// (--mcp-stdio sets mcp_stdio).
func flagKey(name string) string { return strings.ReplaceAll(name, "-", "_") }
