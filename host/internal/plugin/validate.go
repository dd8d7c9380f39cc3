package plugin

import (
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/hostpattern"
)

// Caps on what a manifest may declare.
const (
	maxNameLen      = 64
	maxTextLen      = 4096 // descriptions
	maxShortLen     = 256  // names, tags, versions, functions, modes, URLs
	maxSkills       = 256
	maxListLen      = 64 // tags, examples, modes, hosts, paths
	maxConfigKeys   = 256
	maxConfigValue  = 64 << 10
	minMemoryBytes  = 64 << 10 // one wasm page
	examplesMaxSize = 64 << 10
)

var (
	reName    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	reSkillID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	// reSemver is the regular expression of semver.org (2.0.0).
	reSemver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

// validator collects every problem of one manifest.
type validator struct {
	file string
	errs []error
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{File: v.file, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) text(field, s string, max int, required bool) {
	switch {
	case s == "" && required:
		v.add(field, "is required")
	case len(s) > max:
		v.add(field, "must be at most %d bytes", max)
	case !utf8.ValidString(s):
		v.add(field, "must be valid UTF-8")
	}
}

func (v *validator) list(field string, items []string, max, maxItems int) {
	if len(items) > maxItems {
		v.add(field, "must have at most %d entries", maxItems)
		return
	}
	for i, s := range items {
		v.text(fmt.Sprintf("%s[%d]", field, i), s, max, true)
	}
}

func (v *validator) manifest(raw *rawManifest) *Manifest {
	m := &Manifest{
		Name: raw.Name, Version: raw.Version, Description: raw.Description,
		Author: raw.Author, License: raw.License, Homepage: raw.Homepage,
		Wasm: raw.Wasm, SHA256: strings.ToLower(raw.SHA256),
	}
	switch {
	case raw.Name == "":
		v.add("name", "is required")
	case len(raw.Name) > maxNameLen:
		v.add("name", "must be at most %d characters", maxNameLen)
	case !reName.MatchString(raw.Name):
		v.add("name", "must match [a-z0-9][a-z0-9-]*")
	}
	switch {
	case raw.Version == "":
		v.add("version", "is required")
	case len(raw.Version) > maxShortLen || !reSemver.MatchString(raw.Version):
		v.add("version", "must be a semantic version like 1.2.0")
	}
	v.text("description", raw.Description, maxTextLen, false)
	v.text("author", raw.Author, maxShortLen, false)
	v.text("license", raw.License, maxShortLen, false)
	v.text("homepage", raw.Homepage, maxShortLen, false)
	switch {
	case raw.Wasm == "":
		v.add("wasm", "is required")
	case filepath.IsAbs(raw.Wasm) || !filepath.IsLocal(raw.Wasm) || strings.Contains(raw.Wasm, `\`):
		v.add("wasm", "must be a relative path inside the plugin folder")
	}
	if raw.SHA256 != "" {
		if b, err := hex.DecodeString(raw.SHA256); err != nil || len(b) != 32 {
			v.add("sha256", "must be 64 hex digits (the SHA-256 of the module)")
		}
	}
	m.Limits = v.limits(&raw.Limits)
	m.Permissions = v.permissions(filepath.Dir(v.file), &raw.Permissions)
	m.Skills = v.skills(raw.Skills)
	if raw.Events != nil {
		v.text("events.function", raw.Events.Function, maxShortLen, true)
		m.Events = &Events{Function: raw.Events.Function}
	}
	return m
}

func (v *validator) limits(raw *rawLimits) config.Limits {
	var l config.Limits
	if raw.Timeout != "" {
		d, err := time.ParseDuration(raw.Timeout)
		switch {
		case err != nil:
			v.add("limits.timeout", "must be a Go duration like 2s or 500ms")
		case d <= 0:
			v.add("limits.timeout", "must be positive")
		default:
			l.Timeout = d
		}
	}
	if raw.Memory != "" {
		b, err := config.ParseByteSize(raw.Memory)
		switch {
		case err != nil:
			v.add("limits.memory", "%v", err)
		case b < minMemoryBytes:
			v.add("limits.memory", "must be at least 64KiB (one wasm page)")
		default:
			l.Memory = b
		}
	}
	if raw.Output != "" {
		b, err := config.ParseByteSize(raw.Output)
		switch {
		case err != nil:
			v.add("limits.output", "%v", err)
		case b == 0:
			v.add("limits.output", "must be positive")
		default:
			l.Output = b
		}
	}
	if raw.Concurrency != nil {
		if *raw.Concurrency < 1 {
			v.add("limits.concurrency", "must be at least 1")
		} else {
			l.Concurrency = *raw.Concurrency
		}
	}
	if raw.MinInstances != nil {
		if *raw.MinInstances < 0 {
			v.add("limits.min_instances", "must not be negative")
		} else {
			l.MinInstances = *raw.MinInstances
		}
	}
	return l
}

func (v *validator) permissions(dir string, raw *rawPermissions) Permissions {
	var p Permissions
	if len(raw.AllowedHosts) > maxListLen {
		v.add("permissions.allowed_hosts", "must have at most %d entries", maxListLen)
	} else {
		for i, h := range raw.AllowedHosts {
			if !hostpattern.Valid(h, false) {
				v.add(fmt.Sprintf("permissions.allowed_hosts[%d]", i), "%q must be a lower-case host name or *.suffix, optionally with :port (no scheme or path)", h)
				continue
			}
			p.AllowedHosts = append(p.AllowedHosts, h)
		}
	}
	if len(raw.Agents) > maxListLen {
		v.add("permissions.agents", "must have at most %d entries", maxListLen)
	} else {
		for i, a := range raw.Agents {
			if !config.ValidAgentPattern(a) {
				v.add(fmt.Sprintf("permissions.agents[%d]", i), "%q must be an agent id with * wildcards (billing, text-*), or *", a)
				continue
			}
			p.Agents = append(p.Agents, a)
		}
	}
	if len(raw.AllowedPaths) > maxListLen {
		v.add("permissions.allowed_paths", "must have at most %d entries", maxListLen)
	} else {
		for _, guest := range sortedKeys(raw.AllowedPaths) {
			host := raw.AllowedPaths[guest]
			field := fmt.Sprintf("permissions.allowed_paths[%q]", guest)
			clean, ok := validGuestPath(guest)
			if !ok {
				v.add(field, "guest path must be absolute and clean, like /data")
				continue
			}
			grant, err := parseHostPath(dir, host)
			if err != nil {
				v.add(field, "%v", err)
				continue
			}
			grant.GuestPath = clean
			p.AllowedPaths = append(p.AllowedPaths, grant)
		}
		sort.Slice(p.AllowedPaths, func(i, j int) bool { return p.AllowedPaths[i].GuestPath < p.AllowedPaths[j].GuestPath })
	}
	if len(raw.Config) > maxConfigKeys {
		v.add("permissions.config", "must have at most %d keys", maxConfigKeys)
	} else if len(raw.Config) > 0 {
		p.Config = make(map[string]string, len(raw.Config))
		for _, k := range sortedKeys(raw.Config) {
			val := raw.Config[k]
			if k == "" || len(k) > maxShortLen || len(val) > maxConfigValue {
				v.add(fmt.Sprintf("permissions.config[%q]", k), "keys must be 1..%d bytes and values at most %d bytes", maxShortLen, maxConfigValue)
				continue
			}
			p.Config[k] = val
		}
	}
	return p
}

func validGuestPath(g string) (string, bool) {
	if g == "" || g[0] != '/' || len(g) > maxShortLen || strings.ContainsAny(g, "\\\x00") {
		return "", false
	}
	c := path.Clean(g)
	return c, c == g || c+"/" == g
}

// parseHostPath parses "host/path[:rw|:ro]" relative to the plugin folder.
func parseHostPath(dir, s string) (PathGrant, error) {
	var g PathGrant
	switch {
	case strings.HasSuffix(s, ":rw"):
		s, g.Writable = strings.TrimSuffix(s, ":rw"), true
	case strings.HasSuffix(s, ":ro"):
		s = strings.TrimSuffix(s, ":ro")
	}
	if s == "" || len(s) > 1024 || strings.ContainsRune(s, 0) {
		return g, errors.New("host path must be a non-empty path, optionally followed by :rw")
	}
	if !filepath.IsAbs(s) {
		abs, err := filepath.Abs(filepath.Join(dir, s))
		if err != nil {
			return g, fmt.Errorf("host path: %w", err)
		}
		s = abs
	}
	g.HostPath = filepath.Clean(s)
	return g, nil
}

// idempotent reads skills[].idempotent: true or false only (a string such
// as "yes" is refused, not guessed).
func (v *validator) idempotent(field string, n *yaml.Node, s *Skill) {
	if n.Kind == 0 {
		return
	}
	if err := n.Decode(&s.Idempotent); err != nil || n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		v.add(field+".idempotent", "must be true or false")
	}
}

func (v *validator) skills(raw []rawSkill) []*Skill {
	switch {
	case len(raw) == 0:
		v.add("skills", "at least one skill is required")
		return nil
	case len(raw) > maxSkills:
		v.add("skills", "must have at most %d skills", maxSkills)
		return nil
	}
	seen := make(map[string]int, len(raw))
	out := make([]*Skill, 0, len(raw))
	for i := range raw {
		r, f := &raw[i], fmt.Sprintf("skills[%d]", i)
		s := &Skill{ID: r.ID, Name: r.Name, Description: r.Description, Function: r.Function,
			Tags: r.Tags, InputModes: r.InputModes, OutputModes: r.OutputModes}
		switch {
		case r.ID == "":
			v.add(f+".id", "is required")
		case len(r.ID) > maxNameLen:
			v.add(f+".id", "must be at most %d characters", maxNameLen)
		case !reSkillID.MatchString(r.ID):
			v.add(f+".id", "must match [a-z0-9][a-z0-9_-]*")
		default:
			if j, dup := seen[r.ID]; dup {
				v.add(f+".id", "%q duplicates skills[%d].id", r.ID, j)
			}
			seen[r.ID] = i
		}
		if s.Name == "" {
			s.Name = s.ID
		}
		if s.Function == "" {
			s.Function = s.ID
		}
		v.text(f+".name", s.Name, maxShortLen, false)
		v.text(f+".description", r.Description, maxTextLen, true)
		v.text(f+".function", s.Function, maxShortLen, false)
		v.list(f+".tags", r.Tags, maxShortLen, maxListLen)
		v.list(f+".input_modes", r.InputModes, maxShortLen, maxListLen)
		v.list(f+".output_modes", r.OutputModes, maxShortLen, maxListLen)
		v.schemas(f, r, s)
		v.idempotent(f, &r.Idempotent, s)
		v.examples(f, r.Examples, s)
		out = append(out, s)
	}
	return out
}

func (v *validator) schemas(f string, r *rawSkill, s *Skill) {
	var err error
	if s.InputSchema, s.input, err = compileSchema(&r.InputSchema); err != nil {
		v.add(f+".input_schema", "%v", err)
	}
	if s.OutputSchema, s.output, err = compileSchema(&r.OutputSchema); err != nil {
		v.add(f+".output_schema", "%v", err)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
