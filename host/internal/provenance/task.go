package provenance

import (
	"encoding/json"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// Fact names of a task's first link.
const (
	FactContextID = "context_id"
	FactSkill     = "skill_id"
	FactPlugin    = "plugin"
	FactInput     = "input_sha256" // digest of the message the task was created from
)

// TaskSubject is the subject of a task's links.
func TaskSubject(id string) string { return "task:" + id }

// taskDoc is what VerifyTask reads of an A2A v1.0 task.
type taskDoc struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
	Artifacts []json.RawMessage          `json:"artifacts"`
	History   []json.RawMessage          `json:"history"`
	Metadata  map[string]json.RawMessage `json:"metadata"`
}

// VerifyTask verifies the chain in an A2A task (v1.0 JSON, as GetTask
// returns it) against keys: the chain itself, the task's current state,
// its artifacts (each must be the one signed, and each signed one present)
// and the facts of its first link (context id, skill, plugin, and the
// input message when the task carries it as its first history entry).
func VerifyTask(task []byte, keys *identity.KeySet) Report {
	var t taskDoc
	if err := identity.Decode(task, &t); err != nil || t.ID == "" {
		r := Report{}
		return fail(&r, -1, "", "", "not an A2A task (v1.0 JSON with an id): %v", err)
	}
	raw, ok := t.Metadata[ExtURI]
	if !ok {
		r := Report{}
		return fail(&r, -1, "", "", "the task has no provenance (metadata %q); was the host configured with identity.key_file?", ExtURI)
	}
	want := Expect{States: map[string]string{TaskSubject(t.ID): t.Status.State}, Artifacts: map[string]string{},
		Facts: map[string]string{FactContextID: t.ContextID}}
	for _, a := range t.Artifacts {
		var id struct {
			ArtifactID string `json:"artifactId"`
		}
		_ = identity.Decode(a, &id)
		d, err := Digest(a)
		if err != nil {
			r := Report{}
			return fail(&r, -1, "", "artifacts", "artifact %s: %v", id.ArtifactID, err)
		}
		want.Artifacts[id.ArtifactID] = d
	}
	if len(t.History) > 0 {
		if d, err := Digest(t.History[0]); err == nil {
			want.Facts[FactInput] = d
		}
	}
	for meta, fact := range map[string]string{"skillId": FactSkill, "plugin": FactPlugin} {
		var v string
		if identity.Decode(t.Metadata[meta], &v) == nil && v != "" {
			want.Facts[fact] = v
		}
	}
	return Verify(raw, keys, want)
}
