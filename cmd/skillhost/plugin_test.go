package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runPlugin runs `skillhost plugin ARGS…` through the root command, as main
// does, and returns stdout, stderr and the exit code main would use.
func runPlugin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"plugin"}, args...))
	err := root.Execute()
	if err != nil {
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), exitCode(err)
}

func sdkDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "sdk")
}

func TestPluginUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	tests := [][]string{
		{"build"},
		{"test", "a", "b"},
		{"inspect"},
		{"new"},
		{"new", "Not_A_Name", "--dir", filepath.Join(t.TempDir(), "x")},
		{"validate", "--no-such-flag", "x"},
		{"publish", "x"}, // --nats is required
		{"unpublish", "x"},
		{"publish", "--nats", "nats://127.0.0.1:1"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			_, stderr, code := runPlugin(t, args...)
			if code != 2 {
				t.Errorf("exit code %d, want 2 (usage); stderr: %s", code, stderr)
			}
		})
	}
}

func TestPluginRuntimeErrorsExit1(t *testing.T) {
	t.Parallel()
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "plugin.yaml"), []byte("name: BAD\nversion: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args       []string
		wantStdout string
		wantErr    string
	}{
		{[]string{"validate", bad}, "problem: " + filepath.Join(bad, "plugin.yaml") + ": name:", "problem(s)"},
		{[]string{"inspect", filepath.Join(bad, "missing.wasm")}, "", "no such file"},
		{[]string{"new", "demo", "--dir", full, "--sdk", sdkDir(t)}, "", "is not empty"},
		{[]string{"test", bad}, "", "version"},
		// refused before any connection: the folder is checked first
		{[]string{"publish", bad, "--nats", "nats://127.0.0.1:1"}, "", "name:"},
	}
	for _, tt := range tests {
		t.Run(tt.args[0], func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runPlugin(t, tt.args...)
			if code != 1 {
				t.Errorf("exit code %d, want 1; stderr: %s", code, stderr)
			}
			if !strings.Contains(stdout, tt.wantStdout) || !strings.Contains(stderr, tt.wantErr) {
				t.Errorf("stdout %q / error %q; want %q / %q", stdout, stderr, tt.wantStdout, tt.wantErr)
			}
		})
	}
}

// TestPluginWorkflow is "writing your first plugin": new, build, validate,
// inspect --json and test, each through the command line.
func TestPluginWorkflow(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go toolchain not on PATH")
	}
	dir := filepath.Join(t.TempDir(), "first")
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"new", "first", "--dir", dir, "--sdk", sdkDir(t)}, "created " + dir + " (go, skill first_hello"},
		{[]string{"build", dir}, "built " + filepath.Join(dir, "first.wasm")},
		{[]string{"validate", dir}, dir + ": ok"},
		{[]string{"test", dir}, "3 passed, 0 failed\n"},
	}
	for _, s := range steps {
		stdout, stderr, code := runPlugin(t, s.args...)
		if code != 0 || !strings.Contains(stdout, s.want) {
			t.Fatalf("plugin %s: exit %d, stdout:\n%s\nstderr:\n%s\nwant stdout containing %q", s.args[0], code, stdout, stderr, s.want)
		}
		if s.args[0] == "build" && !strings.Contains(stderr, "[2/3] compile first") {
			t.Errorf("build progress missing from stderr:\n%s", stderr)
		}
	}
	stdout, _, code := runPlugin(t, "inspect", "--json", dir)
	var got struct {
		Exports  []string `json:"exports"`
		Manifest struct {
			Name      string `json:"name"`
			Effective struct {
				Timeout string `json:"timeout"`
			} `json:"effective_limits"`
		} `json:"manifest"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); code != 0 || err != nil {
		t.Fatalf("inspect --json: exit %d, %v:\n%s", code, err, stdout)
	}
	if got.Manifest.Name != "first" || got.Manifest.Effective.Timeout != "2s" || !strings.Contains(strings.Join(got.Exports, ","), "first_hello") {
		t.Errorf("inspect --json = %+v", got)
	}
}
