package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/skillhost/skillhost/host/fault"
)

// Step types.
const (
	TypeSkill = "skill" // action is a skill id, resolved across all plugins
	TypeAgent = "agent" // action is a skill of the plugin named by agent
)

// Caps on the free-text fields of a definition.
const (
	maxNameBytes        = 256
	maxDescriptionBytes = 4096
	maxActionBytes      = 256
)

var stepIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Definition is a plan: named steps forming a dependency graph (by default
// each step depends on the one before it). It is the plan_definition of
// _cleveragents/plan/create.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Steps       []Step `json:"steps"`
}

// Step is one unit of work of a plan.
type Step struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Action string `json:"action"`
	// Agent is the plugin name for type "agent"; empty for type "skill".
	Agent string `json:"agent,omitempty"`
	// Params is the skill's JSON input (an object); absent means {}.
	Params json.RawMessage `json:"params,omitempty"`
	// TimeoutMS caps the step's run in milliseconds; 0 means the skill's limit.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// DependsOn lists the ids of the steps that must complete before this
	// one starts. Absent means the step before it (none for the first);
	// ParseDefinition replaces an absent list with that explicit one, so a
	// stored definition always lists its dependencies ([] = none).
	DependsOn []string `json:"depends_on"`
	// Retry re-runs the step after a retryable failure; nil means one attempt.
	Retry *Retry `json:"retry,omitempty"`
}

// Retry is a step's retry policy.
type Retry struct {
	// MaxAttempts is how often the step may start in all, the first run
	// included: 1..MaxRetryAttempts.
	MaxAttempts int `json:"max_attempts"`
	// BackoffMS is the wait before the second attempt in milliseconds; it
	// doubles before each further attempt (0..MaxBackoffMS, the doubled
	// waits capped at MaxBackoffMS).
	BackoffMS int64 `json:"backoff_ms"`
}

// Caps of a retry policy.
const (
	MaxRetryAttempts = 10
	MaxBackoffMS     = 60_000
)

// attempts is how often the step may start.
func (s Step) attempts() int {
	if s.Retry == nil || s.Retry.MaxAttempts < 1 {
		return 1
	}
	return s.Retry.MaxAttempts
}

// backoff is the wait before attempt n+1 after n attempts (n >= 1).
func (s Step) backoff(n int) time.Duration {
	if s.Retry == nil || s.Retry.BackoffMS <= 0 {
		return 0
	}
	d := time.Duration(s.Retry.BackoffMS) * time.Millisecond
	for i := 1; i < n && d < MaxBackoffMS*time.Millisecond; i++ {
		d *= 2
	}
	return min(d, MaxBackoffMS*time.Millisecond)
}

// Timeout is the step's own timeout (0 = none).
func (s Step) Timeout() time.Duration { return time.Duration(s.TimeoutMS) * time.Millisecond }

// ParseDefinition decodes and validates a plan definition strictly: unknown
// fields, duplicate or malformed step ids, unknown step types, empty actions
// and anything over the caps of cfg are InvalidParams errors whose message
// and data name the offending field (e.g. "plan_definition.steps[2].id").
func ParseDefinition(raw json.RawMessage, section Config) (*Definition, error) {
	cfg, err := resolve(section)
	if err != nil {
		return nil, err
	}
	return parseDefinition(raw, cfg)
}

func parseDefinition(raw json.RawMessage, cfg settings) (*Definition, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badField("plan_definition", "is required: {name, steps:[{id, type, action, params?, depends_on?, retry?}]}")
	}
	if len(raw) > int(cfg.MaxDefinition) {
		return nil, badField("plan_definition", fmt.Sprintf("is %d bytes, over the %d-byte limit", len(raw), int(cfg.MaxDefinition)))
	}
	if raw[0] != '{' {
		return nil, badField("plan_definition", "must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d Definition
	if err := dec.Decode(&d); err != nil {
		return nil, badField("plan_definition", "is malformed: "+cleanJSONError(err))
	}
	if dec.More() {
		return nil, badField("plan_definition", "has trailing data after the object")
	}
	if err := d.validate(cfg); err != nil {
		return nil, err
	}
	return &d, nil
}

func (d *Definition) validate(cfg settings) error {
	switch {
	case strings.TrimSpace(d.Name) == "":
		return badField("plan_definition.name", "is required")
	case !printable(d.Name, maxNameBytes):
		return badField("plan_definition.name", fmt.Sprintf("must be at most %d bytes of printable UTF-8", maxNameBytes))
	case !utf8.ValidString(d.Description) || len(d.Description) > maxDescriptionBytes:
		return badField("plan_definition.description", fmt.Sprintf("must be at most %d bytes of UTF-8", maxDescriptionBytes))
	case len(d.Steps) == 0:
		return badField("plan_definition.steps", "must list at least one step")
	case len(d.Steps) > cfg.MaxSteps:
		return badField("plan_definition.steps", fmt.Sprintf("has %d steps, over the limit of %d", len(d.Steps), cfg.MaxSteps))
	}
	seen := make(map[string]int, len(d.Steps))
	for i := range d.Steps {
		s := &d.Steps[i]
		field := fmt.Sprintf("plan_definition.steps[%d]", i)
		if !stepIDPattern.MatchString(s.ID) {
			return badField(field+".id", fmt.Sprintf("%q must be 1-%d characters of A-Z a-z 0-9 _ . -", clip(s.ID, 80), MaxStepIDBytes))
		}
		if j, dup := seen[s.ID]; dup {
			return badField(field+".id", fmt.Sprintf("%q is already used by steps[%d]; step ids must be unique", s.ID, j)).With("step_id", s.ID)
		}
		seen[s.ID] = i
		if err := s.validate(field, cfg); err != nil {
			return err.With("step_id", s.ID)
		}
	}
	g, err := d.checkGraph(seen)
	if err != nil {
		return err
	}
	return d.checkReferences(g)
}

func (s *Step) validate(field string, cfg settings) *fault.Error {
	switch s.Type {
	case TypeSkill:
		if s.Agent != "" {
			return badField(field+".agent", `is only allowed for type "agent"`)
		}
	case TypeAgent:
		if !printable(s.Agent, maxActionBytes) || s.Agent == "" {
			return badField(field+".agent", `is required for type "agent": the plugin name`)
		}
	case "":
		return badField(field+".type", `is required: "skill" or "agent"`)
	default:
		return badField(field+".type", fmt.Sprintf(`%q is not a step type; use "skill" or "agent"`, clip(s.Type, 64)))
	}
	if s.Action == "" {
		return badField(field+".action", "is required: the skill id to run")
	}
	if !printable(s.Action, maxActionBytes) {
		return badField(field+".action", fmt.Sprintf("must be at most %d bytes of printable UTF-8", maxActionBytes))
	}
	p := bytes.TrimSpace(s.Params)
	if len(p) > 0 && string(p) != "null" && p[0] != '{' {
		return badField(field+".params", "must be an object (the skill's JSON input)")
	}
	if string(p) == "null" {
		p = nil
	}
	s.Params = p
	if s.TimeoutMS < 0 || s.Timeout() > cfg.MaxTimeout {
		return badField(field+".timeout_ms", fmt.Sprintf("must be a positive number of milliseconds, at most %d", cfg.MaxTimeout.Milliseconds()))
	}
	if r := s.Retry; r != nil {
		if r.MaxAttempts < 1 || r.MaxAttempts > MaxRetryAttempts {
			return badField(field+".retry.max_attempts", fmt.Sprintf("must be 1..%d (the first run included)", MaxRetryAttempts))
		}
		if r.BackoffMS < 0 || r.BackoffMS > MaxBackoffMS {
			return badField(field+".retry.backoff_ms", fmt.Sprintf("must be 0..%d milliseconds", MaxBackoffMS))
		}
	}
	return nil
}

// badField is the InvalidParams error for a definition field.
func badField(field, msg string) *fault.Error {
	return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, field+" "+msg).With("field", field)
}

// printable reports whether s is non-empty-or-empty UTF-8 of at most max
// bytes without control characters.
func printable(s string, max int) bool {
	if len(s) > max || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// cleanJSONError drops encoding/json's Go type names from a decode error.
func cleanJSONError(err error) string {
	msg := err.Error()
	msg = strings.ReplaceAll(msg, "json: ", "")
	msg = strings.ReplaceAll(msg, "plan.Definition", "plan_definition")
	msg = strings.ReplaceAll(msg, "plan.Step", "step")
	msg = strings.ReplaceAll(msg, "plan.Retry", "retry")
	return clip(msg, 200)
}
