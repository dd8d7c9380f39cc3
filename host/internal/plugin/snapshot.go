package plugin

import "sort"

// Snapshot is an immutable view of the registry at one revision. Revision
// increases on every change (a plugin loaded, replaced or removed, or the
// problem list changed), so it serves as the Agent Card's ETag.
type Snapshot struct {
	Revision uint64
	Plugins  []*Plugin // sorted by name
	Problems []Problem // sorted by path

	byName  map[string]*Plugin
	bySkill map[string]skillRef
}

type skillRef struct {
	plugin *Plugin
	skill  *Skill
}

// Skill finds a skill by id and the plugin that provides it.
func (s *Snapshot) Skill(id string) (*Plugin, *Skill, bool) {
	ref, ok := s.bySkill[id]
	return ref.plugin, ref.skill, ok
}

// Plugin finds a plugin by name.
func (s *Snapshot) Plugin(name string) (*Plugin, bool) {
	p, ok := s.byName[name]
	return p, ok
}

// SkillIDs lists every skill id, sorted.
func (s *Snapshot) SkillIDs() []string {
	ids := make([]string, 0, len(s.bySkill))
	for _, p := range s.Plugins {
		for _, sk := range p.Manifest.Skills {
			ids = append(ids, sk.ID)
		}
	}
	sort.Strings(ids)
	return ids
}
