package examples_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var progressLine = regexp.MustCompile(`^progress: [0-4]/4( running (greet|left|right|report)(, (left|right))?)?$`)

var (
	planBinOnce sync.Once
	planBinErr  error
)

// mustPlanBinary builds the plan example next to the other example binaries.
func mustPlanBinary(t *testing.T) string {
	t.Helper()
	path := filepath.Join(bin, "plan")
	planBinOnce.Do(func() {
		out, err := exec.Command("go", "build", "-o", path, "./plan").CombinedOutput()
		if err != nil {
			planBinErr = err
			t.Logf("go build ./plan:\n%s", out)
		}
	})
	if planBinErr != nil {
		t.Fatalf("building the plan example: %v", planBinErr)
	}
	return path
}

// mustPlanPlugins serves the plan package's fixtures: hostile (echo, trap)
// and burn (spins, then echoes).
func mustPlanPlugins(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, manifest := range map[string]string{
		"hostile": "name: hostile\nversion: 1.0.0\ndescription: fixture\nwasm: plugin.wasm\nskills:\n  - {id: echo, description: echoes}\n  - {id: trap, description: traps}\n",
		"burn":    "name: burn\nversion: 1.0.0\ndescription: fixture\nwasm: plugin.wasm\nlimits: {timeout: 30s}\nskills:\n  - {id: burn, description: spins then echoes}\n",
	} {
		wasm, err := os.ReadFile(filepath.Join("..", "host", "internal", "plan", "testdata", name+".wasm"))
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, data := range map[string][]byte{"plugin.wasm": wasm, "plugin.yaml": []byte(manifest)} {
			if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

func writePlan(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPlan runs the plan example and returns stdout lines, stderr and the exit code.
func runPlan(t *testing.T, url, planFile string, args ...string) ([]string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, mustPlanBinary(t), append([]string{"--url", url, "--plan", planFile, "--interval", "20ms"}, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n"), stderr.String(), code
}

func TestPlanExample(t *testing.T) {
	t.Parallel()
	url := mustHost(t, mustPlanPlugins(t))
	planFile := writePlan(t, `{"name": "Fixture pipeline", "steps": [
		{"id": "greet", "type": "skill", "action": "echo", "params": {"text": "${plan.input.name}"}},
		{"id": "left", "type": "skill", "action": "burn", "params": {"n": 2000000, "side": "left"}, "depends_on": ["greet"]},
		{"id": "right", "type": "skill", "action": "burn", "params": {"n": 2000000, "side": "right"}, "depends_on": ["greet"]},
		{"id": "report", "type": "agent", "agent": "hostile", "action": "echo", "depends_on": ["left", "right"],
		 "params": {"report": "ok", "left": "${steps.left.output.side}", "right": "${steps.right.output.side}", "greeting": "hello ${steps.greet.output.text}"}}]}`)
	inputFile := filepath.Join(t.TempDir(), "input.json")
	if err := os.WriteFile(inputFile, []byte(`{"name":"ada"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	lines, stderr, code := runPlan(t, url, planFile, "--input", inputFile)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, strings.Join(lines, "\n"), stderr)
	}
	if len(lines) < 6 {
		t.Fatalf("too few lines:\n%s", strings.Join(lines, "\n"))
	}
	matchLines(t, lines[:3], []string{`session: sess_[0-9a-f]+`, `plan plan_[0-9a-f]+ created: "Fixture pipeline", 4 steps`, `executing: exec_[0-9a-f]+`})
	progress := lines[3 : len(lines)-2]
	for _, l := range progress {
		if !progressLine.MatchString(l) {
			t.Errorf("progress line %q", l)
		}
	}
	if diff := cmp.Diff([]string{"progress: 4/4", "completed", `result: {"greeting":"hello ada","left":"left","report":"ok","right":"right"}`},
		append([]string{progress[len(progress)-1]}, lines[len(lines)-2:]...)); diff != "" {
		t.Errorf("last lines (-want +got):\n%s", diff)
	}
}

func TestPlanExampleReportsAFailedStep(t *testing.T) {
	t.Parallel()
	url := mustHost(t, mustPlanPlugins(t))
	planFile := writePlan(t, `{"name": "Doomed", "steps": [
		{"id": "ok", "type": "skill", "action": "echo", "params": {}},
		{"id": "boom", "type": "skill", "action": "trap"}]}`)
	_, stderr, code := runPlan(t, url, planFile)
	if code != 1 || !strings.Contains(stderr, "plan failed") || !strings.Contains(stderr, "step boom, reason trap") {
		t.Errorf("exit %d, stderr %q; want 1 naming step boom and reason trap", code, stderr)
	}
}
