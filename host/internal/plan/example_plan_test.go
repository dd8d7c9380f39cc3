package plan

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// TestPlanJSONMatchesFirstPartyPlugins: examples/plan/plan.json passes
// definition validation (dependencies and references included), names only
// skills the first-party plugins have, and examples/plan/input.json
// satisfies its ${plan.input…} references.
func TestPlanJSONMatchesFirstPartyPlugins(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "plan", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	def, err := ParseDefinition(raw, Config{})
	if err != nil {
		t.Fatalf("plan.json: %v", err)
	}
	input, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "plan", "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := def.checkInput(input, int(config.Defaults().Plans.MaxRecord)); err != nil {
		t.Errorf("input.json: %v", err)
	}
	owner := map[string]string{} // skill id -> plugin name
	dirs, err := filepath.Glob(filepath.Join("..", "..", "..", "plugins", "*", "plugin.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no first-party plugins found: %v", err)
	}
	for _, f := range dirs {
		m, err := plugin.LoadManifest(filepath.Dir(f))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range m.Skills {
			owner[s.ID] = m.Name
		}
	}
	for _, s := range def.Steps {
		p, ok := owner[s.Action]
		if !ok {
			t.Errorf("step %s: no first-party plugin has skill %q", s.ID, s.Action)
		}
		if s.Type == TypeAgent && s.Agent != p {
			t.Errorf("step %s: skill %q belongs to plugin %q, not %q", s.ID, s.Action, p, s.Agent)
		}
	}
}
