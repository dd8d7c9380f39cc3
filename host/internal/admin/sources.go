package admin

import (
	"time"
)

// SourceState is one sources.oci entry as the host last pulled it.
type SourceState struct {
	Ref string
	// Dir is the plugin folder it is pulled into.
	Dir string
	// Digest is the manifest digest on disk ("" before a pull succeeded).
	Digest   string
	PulledAt time.Time
	// Error is why the last pull failed; ErrorSince when failures began.
	Error      string
	ErrorSince time.Time
}

// OCIView is where a plugin is pulled from (sources.oci) and how its last
// pull went.
type OCIView struct {
	Ref string `json:"ref"`
	// Digest is the OCI manifest digest of the revision on disk.
	Digest   string     `json:"digest,omitempty"`
	PulledAt *time.Time `json:"pulled_at,omitempty"`
	// PullError is why the last pull failed (the revision on disk, if any,
	// keeps serving); PullErrorSince when the failures began.
	PullError      string     `json:"pull_error,omitempty"`
	PullErrorSince *time.Time `json:"pull_error_since,omitempty"`
}

// SettingsView is what operators see of a plugin's plugins.<name>
// settings: config keys, and per secret "set" (readable now) or "unset".
// Values are never shown.
type SettingsView struct {
	Config  []string          `json:"config"`
	Secrets map[string]string `json:"secrets"`
}

// withSources attaches each source's state to the plugin pulled into its
// folder, and lists a source whose folder holds no plugin yet (its pulls
// failed) as a failed entry named after its reference.
func (a *Admin) withSources(views []PluginView, seen map[string]bool) []PluginView {
	if a.d.Sources == nil {
		return views
	}
	byDir := map[string]int{}
	for i, v := range views {
		byDir[v.Dir] = i
	}
	for _, s := range a.d.Sources() {
		ov := &OCIView{Ref: s.Ref, Digest: s.Digest, PullError: s.Error}
		if !s.PulledAt.IsZero() {
			ov.PulledAt = &s.PulledAt
		}
		if s.Error != "" {
			ov.PullErrorSince = &s.ErrorSince
		}
		if i, ok := byDir[s.Dir]; ok && seen[s.Dir] {
			views[i].OCI = ov
			if s.Error != "" && views[i].State != StateFailed {
				views[i].Error = joinLines(views[i].Error, "pull of "+s.Ref+" failed (the pulled revision keeps serving): "+s.Error)
				if views[i].ProblemSince == nil {
					views[i].ProblemSince = ov.PullErrorSince
				}
			}
			continue
		}
		msg := s.Error
		if msg == "" {
			msg = "not pulled yet"
		}
		views = append(views, PluginView{Name: s.Ref, State: StateFailed, Error: "pull of " + s.Ref + " failed: " + msg,
			ProblemSince: ov.PullErrorSince, Source: SourceOCI, Dir: s.Dir, Skills: []SkillView{}, OCI: ov})
	}
	return views
}

// settings is the plugin's SettingsView; nil when it has none.
func (a *Admin) settings(plugin string) *SettingsView {
	if a.d.Settings == nil {
		return nil
	}
	keys, secrets := a.d.Settings(plugin)
	if keys == nil && secrets == nil {
		return nil
	}
	if keys == nil {
		keys = []string{}
	}
	if secrets == nil {
		secrets = map[string]string{}
	}
	return &SettingsView{Config: keys, Secrets: secrets}
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}
