package host_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/config"
)

// Issue 20, finding 5, over HTTP with two ordinary keys: one key that has
// stored as many tasks and plans as its quota allows is refused with
// -32106 key_quota naming the quota, while the other key keeps creating
// both (before: one key filled the shared buckets for everyone).
func TestKeyQuotaOnStoredTasksAndPlans(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	alice, bob := newKey(t, "alice", "*"), newKey(t, "bob", "*")
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		c.Auth.Keys = append(c.Auth.Keys, alice.Entry, bob.Entry)
		c.A2A.MaxBucket = 64 * config.MiB
		c.A2A.MaxTasksPerKey = 3
		c.Plans.MaxPerKey = 2
	})
	for i := range 3 {
		th.mustAs(t, alice.Secret, "SendMessage", sendMessage("echo", map[string]any{"i": i}))
	}
	over := th.as(t, alice.Secret, "SendMessage", sendMessage("echo", map[string]any{"i": 3}))
	wantRefused(t, over, 429, -32106, "key_quota")
	if !strings.Contains(string(over.Body), "a2a.max_tasks_per_key") {
		t.Errorf("the refusal does not name a2a.max_tasks_per_key: %s", over.Body)
	}
	th.mustAs(t, bob.Secret, "SendMessage", sendMessage("echo", map[string]any{"from": "bob"}))

	sa := th.mustAs(t, alice.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
	sb := th.mustAs(t, bob.Secret, "_cleveragents/session/create", map[string]any{})["session_id"]
	for i := range 2 {
		th.mustAs(t, alice.Secret, "_cleveragents/plan/create", map[string]any{"session_id": sa, "plan_id": fmt.Sprint("p", i), "plan_definition": planOf("echo")})
	}
	over = th.as(t, alice.Secret, "_cleveragents/plan/create", map[string]any{"session_id": sa, "plan_definition": planOf("echo")})
	wantRefused(t, over, 429, -32106, "key_quota")
	if !strings.Contains(string(over.Body), "plans.max_per_key") {
		t.Errorf("the refusal does not name plans.max_per_key: %s", over.Body)
	}
	th.mustAs(t, bob.Secret, "_cleveragents/plan/create", map[string]any{"session_id": sb, "plan_definition": planOf("echo")})
	th.mustAs(t, bob.Secret, "SendMessage", sendMessage("echo", map[string]any{"from": "bob", "again": true}))
}
