package host_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// jsFormClient installs testdata/jsform (the official @a2a-js/sdk, pinned
// by its package-lock.json) once into the user cache and returns the folder
// holding form.mjs. Skipped without node and npm, except in CI (CI=true),
// where .ci/run installs them.
func jsFormClient(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not on PATH", tool)
			}
			t.Skipf("%s is not on PATH (CI installs it)", tool)
		}
	}
	src, files := filepath.Join("testdata", "jsform"), []string{"package.json", "package-lock.json", "form.mjs"}
	h := sha256.New()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "skillhost-test", "a2a-js-form-"+hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk", "package.json")); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range files {
		b, _ := os.ReadFile(filepath.Join(src, f))
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (the official A2A JS SDK): %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(dir); serr != nil { // another test process won the rename
			t.Fatal(err)
		}
	}
	return dir
}

// TestFormFillJSClient: the official @a2a-js/sdk client fills the form over
// three turns on both bindings (JSON-RPC, HTTP+JSON), its second turn
// streamed: input-required asking for name, then a stream of working,
// working, input-required asking for email, then completed with the form.
func TestFormFillJSClient(t *testing.T) {
	t.Parallel()
	dir := jsFormClient(t)
	th, _ := startHostAt(t, mustFormPlugin(t), t.TempDir())
	cmd := exec.Command("node", filepath.Join(dir, "form.mjs"), th.URL)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node form.mjs: %v\n%s", err, stderr.String())
	}
	const (
		working, inputRequired, completed = 2, 6, 3 // the SDK's TaskState numbers
	)
	for _, binding := range []string{"JSONRPC", "HTTP+JSON"} {
		want := map[string]any{"binding": binding, "protocol": binding, "turns": []any{
			[]any{float64(inputRequired), "Please enter name (1 of 2)."},
			[]any{[]any{float64(working), float64(working), float64(inputRequired)}, "Please enter email (2 of 2)."},
			[]any{float64(completed), map[string]any{"name": "Ada", "email": "ada@example.com"}},
		}}
		var got map[string]any
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["binding"] == binding {
				got = m
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", binding, diff)
		}
	}
}
