package admin

import (
	"path/filepath"
	"sort"
	"time"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

// Plugin states.
const (
	StateLoaded    = "loaded"    // serving
	StateNotReady  = "not_ready" // loaded, but no instance has started: see Error
	StateReloading = "reloading" // serving while a new revision compiles
	StateLoading   = "loading"   // compiling for the first time: calls wait for it (within their deadline), then plugin_loading
	StateFailed    = "failed"    // not serving: see Error
)

// Plugin sources.
const (
	SourceLocal     = "local"     // the plugin folder (plugins)
	SourcePublished = "published" // published to the cluster (skillhost plugin publish)
	SourceOCI       = "oci"       // pulled from an OCI registry (sources.oci)
)

// PluginsDoc is GET /admin/plugins.
type PluginsDoc struct {
	Revision uint64       `json:"revision"` // the registry revision (the Agent Card's ETag)
	Plugins  []PluginView `json:"plugins"`  // sorted by name
}

// PluginView is one plugin folder: a loaded plugin, one compiling, or one
// that failed to load.
type PluginView struct {
	Name        string `json:"name"` // the manifest's; a failed folder's name when its manifest did not load
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	State       string `json:"state"`
	// Error is why the folder failed to load; for a loaded plugin, why its
	// newest revision was refused (the loaded one keeps serving).
	Error        string     `json:"error,omitempty"`
	ProblemSince *time.Time `json:"problem_since,omitempty"`
	Source       string     `json:"source"`
	Dir          string     `json:"dir"`
	// Revision is the registry revision that loaded this plugin revision.
	Revision uint64 `json:"revision,omitempty"`
	// Digest is the module's "sha256:<hex>".
	Digest string `json:"digest,omitempty"`
	// Signer is who signed the plugin (plugin.sig): the trusted
	// publisher's name and key id, or a key id marked untrusted; null
	// when the plugin is unsigned.
	Signer         *string     `json:"signer"`
	LoadedAt       *time.Time  `json:"loaded_at,omitempty"`
	CompilingSince *time.Time  `json:"compiling_since,omitempty"`
	Limits         *LimitsView `json:"limits,omitempty"`
	Skills         []SkillView `json:"skills"`
	// OCI is the sources.oci entry the plugin is pulled from.
	OCI *OCIView `json:"oci,omitempty"`
	// Settings are the operator's plugins.<name> settings, values hidden.
	Settings *SettingsView `json:"settings,omitempty"`
}

// LimitsView are a plugin's effective limits (its requests, defaults
// filled, capped by the operator's policy), readable and exact.
type LimitsView struct {
	Timeout     string `json:"timeout"`
	TimeoutMS   int64  `json:"timeout_ms"`
	Memory      string `json:"memory"`
	MemoryBytes uint64 `json:"memory_bytes"`
	Output      string `json:"output"`
	OutputBytes int64  `json:"output_bytes"`
	Concurrency int    `json:"concurrency"`
	// MinInstances are kept warm; IdleTimeout closes the others unused
	// (policy.idle_timeout), then releases the code.
	MinInstances int    `json:"min_instances"`
	IdleTimeout  string `json:"idle_timeout"`
	QueueWait    string `json:"queue_wait"`
}

// SkillView is one skill of a plugin.
type SkillView struct {
	ID          string   `json:"id"`
	Name        string   `json:"name,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	// RateLimits are the policy.skill_rates rules that apply to the skill.
	RateLimits []plugin.RateRule `json:"rate_limits,omitempty"`
}

// Plugins lists every plugin folder the registry knows.
func (a *Admin) Plugins() PluginsDoc {
	snap := a.d.Registry.Snapshot()
	loading := map[string]plugin.Loading{}
	for _, l := range a.d.Registry.Loading() {
		loading[l.Dir] = l
	}
	problems := map[string]plugin.Problem{}
	for _, p := range snap.Problems {
		problems[p.Path] = p
	}
	doc := PluginsDoc{Revision: snap.Revision, Plugins: []PluginView{}}
	seen := map[string]bool{}
	notReady := a.notReadyByDir()
	for _, p := range snap.Plugins {
		seen[p.Dir] = true
		v := a.loadedView(p)
		if l, ok := loading[p.Dir]; ok {
			v.State, v.CompilingSince = StateReloading, &l.Since
			if l.Registered { // served while its first compile runs in the background
				v.State = StateLoading
			}
		}
		if pr, ok := problems[p.Dir]; ok {
			v.Error, v.ProblemSince = pr.Message, &pr.Time
		}
		if why, ok := notReady[p.Dir]; ok && v.State == StateLoaded {
			v.State, v.Error = StateNotReady, joinLines(why, v.Error)
		}
		doc.Plugins = append(doc.Plugins, v)
	}
	for dir, l := range loading {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		v := PluginView{Name: l.Plugin, Version: l.Version, State: StateLoading, Source: a.source(dir), Dir: dir,
			CompilingSince: &l.Since, Skills: []SkillView{}}
		for _, id := range l.Skills {
			v.Skills = append(v.Skills, SkillView{ID: id})
		}
		doc.Plugins = append(doc.Plugins, v)
	}
	for dir, pr := range problems {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		doc.Plugins = append(doc.Plugins, PluginView{Name: filepath.Base(dir), State: StateFailed, Error: pr.Message,
			ProblemSince: &pr.Time, Source: a.source(dir), Dir: dir, Skills: []SkillView{}})
	}
	doc.Plugins = a.withSources(doc.Plugins, seen)
	for i := range doc.Plugins {
		doc.Plugins[i].Settings = a.settings(doc.Plugins[i].Name)
	}
	sort.Slice(doc.Plugins, func(i, j int) bool {
		if doc.Plugins[i].Name != doc.Plugins[j].Name {
			return doc.Plugins[i].Name < doc.Plugins[j].Name
		}
		return doc.Plugins[i].Dir < doc.Plugins[j].Dir
	})
	return doc
}

func (a *Admin) loadedView(p *plugin.Plugin) PluginView {
	m := p.Manifest
	loaded := p.LoadedAt
	v := PluginView{Name: m.Name, Version: m.Version, Description: m.Description, State: StateLoaded,
		Source: a.source(p.Dir), Dir: p.Dir, Revision: p.Revision, Digest: "sha256:" + p.WasmSHA256,
		LoadedAt: &loaded, Limits: limitsView(p.Limits), Skills: make([]SkillView, 0, len(m.Skills))}
	for _, s := range m.Skills {
		v.Skills = append(v.Skills, SkillView{ID: s.ID, Name: s.Name, Description: s.Description, Tags: s.Tags,
			RateLimits: a.d.Registry.SkillRates(s.ID)})
	}
	v.Signer = signerOf(p.Signing)
	return v
}

// signerOf names who signed a plugin: the first trusted signer, else the
// first signer (untrusted); nil when unsigned.
func signerOf(s *plugin.Signing) *string {
	if s == nil || len(s.Signers) == 0 {
		return nil
	}
	sg := s.Signers[0]
	for _, x := range s.Signers {
		if x.Trusted {
			sg = x
			break
		}
	}
	name := sg.KeyID + " (untrusted)"
	if sg.Trusted {
		name = sg.Publisher + " (" + sg.KeyID + ")"
	}
	return &name
}

func limitsView(l sandbox.Limits) *LimitsView {
	return &LimitsView{
		Timeout: l.Timeout.String(), TimeoutMS: l.Timeout.Milliseconds(),
		Memory: config.ByteSize(l.MemoryBytes).String(), MemoryBytes: l.MemoryBytes,
		Output: config.ByteSize(max(l.OutputBytes, 0)).String(), OutputBytes: l.OutputBytes,
		Concurrency: l.Concurrency, MinInstances: l.MinInstances, IdleTimeout: l.IdleTimeout.String(), QueueWait: l.QueueWait.String(),
	}
}

// source tells a published or pulled plugin's folder from a local one.
func (a *Admin) source(dir string) string {
	switch {
	case within(a.d.PublishedDir, dir):
		return SourcePublished
	case within(a.d.OCIDir, dir):
		return SourceOCI
	}
	return SourceLocal
}

// within reports whether dir is inside root (a non-empty folder).
func within(root, dir string) bool {
	if root == "" {
		return false
	}
	rel, err := filepath.Rel(root, dir)
	return err == nil && filepath.IsLocal(rel)
}
