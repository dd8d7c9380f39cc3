package host_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/identity"
)

// TestVerifyTaskRefusesForgedDocuments: issue 20 finding 7, end to end. A
// task a signing host ran verifies with verify-task (host.VerifyTask) and
// _cleveragents/task/verify; the same task with forged artifacts, status
// and history followed by the signed ones under other-case names, or with
// a forged id followed by "ID", verifies with neither.
func TestVerifyTaskRefusesForgedDocuments(t *testing.T) {
	t.Parallel()
	key := mustKeygen(t, t.TempDir(), "host.key", "ed25519")
	plugins := t.TempDir()
	mustPlugin(t, plugins, "tools", toolsManifest)
	th, _ := mustHostWith(t, plugins, func(c *config.Config) { c.Identity.KeyFile = []string{key.Private} })
	sent := th.mustAs(t, "", "SendMessage", sendMessage("echo", map[string]any{"total": 3}))["task"].(map[string]any)
	r := th.as(t, "", "GetTask", map[string]any{"id": sent["id"]})
	var task map[string]json.RawMessage
	if err := json.Unmarshal(r.RPC.Result, &task); err != nil || task["artifacts"] == nil || task["history"] == nil {
		t.Fatalf("GetTask: %s (%v)", r.Body, err)
	}
	doc := func(members ...string) []byte { // name, raw value, name, raw value, …
		var b strings.Builder
		b.WriteByte('{')
		for i := 0; i < len(members); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + members[i] + `":` + members[i+1])
		}
		b.WriteByte('}')
		return []byte(b.String())
	}
	m := func(name string) string { return string(task[name]) }
	forgedArtifacts := strings.Replace(m("artifacts"), `"total":3`, `"total":1000000`, 1)
	forgedHistory := strings.Replace(m("history"), `"total":3`, `"total":1`, 1)
	tests := []struct {
		name  string
		doc   []byte
		valid bool
	}{
		{"as signed", doc("id", m("id"), "contextId", m("contextId"), "status", m("status"), "artifacts", m("artifacts"),
			"history", m("history"), "metadata", m("metadata")), true},
		{"forged members, then the signed ones in another case", doc("id", m("id"), "contextId", m("contextId"),
			"status", `{"state":"TASK_STATE_COMPLETED"}`, "artifacts", forgedArtifacts, "history", forgedHistory,
			"Status", m("status"), "Artifacts", m("artifacts"), "History", m("history"), "metadata", m("metadata")), false},
		{"a forged id, then ID", doc("id", `"forged-task"`, "contextId", m("contextId"), "status", m("status"),
			"artifacts", m("artifacts"), "history", m("history"), "metadata", m("metadata"), "ID", m("id")), false},
	}
	_, jwksBody := th.get(t, identity.JWKSPath)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := host.VerifyTask(tt.doc, host.VerifyKeys{JWKS: jwksBody})
			if err != nil || v.Valid != tt.valid {
				t.Errorf("verify-task: valid = %v (%v %s), want %v", v.Valid, err, v.Message(), tt.valid)
			}
			got := th.mustAs(t, "", "_cleveragents/task/verify", map[string]any{"task": json.RawMessage(tt.doc)})
			if got["valid"] != tt.valid {
				t.Errorf("task/verify: %v, want valid %v", got, tt.valid)
			}
		})
	}
}
