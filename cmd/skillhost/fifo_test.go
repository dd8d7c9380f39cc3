package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFOInPluginFolderDoesNotWedgeTheHost: issue 20 finding 8. A FIFO
// named plugin.yaml blocked loading in open(2): the plugins after it never
// loaded, SIGTERM did not end the host within its grace, and a restarted
// host did not serve. Now the host starts, serves the other plugin, reports
// the FIFO as a load error naming the file, exits on SIGTERM within its
// grace, and does the same again when restarted on the same folders.
func TestFIFOInPluginFolderDoesNotWedgeTheHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plugins := filepath.Join(dir, "plugins")
	if err := os.MkdirAll(filepath.Join(plugins, "a-fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	// "a-fifo" is loaded before "tools".
	if err := syscall.Mkfifo(filepath.Join(plugins, "a-fifo", "plugin.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(filepath.Join("..", "..", "host", "internal", "sandbox", "testdata", "hostile.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(plugins, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(plugins, "tools", "hostile.wasm"), string(wasm))
	writeFile(t, filepath.Join(plugins, "tools", "plugin.yaml"), "name: tools\nversion: 1.0.0\ndescription: d\nwasm: hostile.wasm\nskills:\n  - {id: echo, description: d, function: echo}\n")
	const grace = 5 * time.Second
	cfg := filepath.Join(dir, "skillhost.yaml")
	writeFile(t, cfg, "http:\n  shutdown_timeout: "+grace.String()+"\n")
	data := filepath.Join(dir, "data")
	for _, run := range []string{"first start", "restart"} {
		h := startHost(t, data, plugins, "--config", cfg)
		var sess struct {
			ID string `json:"session_id"`
		}
		mustResult(t, call(t, h.url, "_cleveragents/session/create", map[string]any{}), &sess)
		var out struct {
			Output map[string]any `json:"output"`
		}
		mustResult(t, call(t, h.url, "_cleveragents/skill/execute", map[string]any{"session_id": sess.ID, "skill_id": "echo",
			"skill_params": map[string]any{"text": "hi"}}), &out)
		if out.Output["text"] != "hi" {
			t.Errorf("%s: echo answered %v", run, out.Output)
		}
		listed, errOut, code := runCLI(t, "plugins", "--url", h.url)
		if code != 0 || !strings.Contains(listed, "a-fifo") || !strings.Contains(listed, "plugin.yaml is a named pipe (FIFO), not a regular file") {
			t.Errorf("%s: plugins: exit %d %s\n%s", run, code, errOut, listed)
		}
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-h.done:
			if err != nil {
				t.Fatalf("%s: exit after SIGTERM: %v\n%s", run, err, h.stderr.String())
			}
		case <-time.After(grace + 25*time.Second): // the grace, then closing the store: a bound, not a measurement
			t.Fatalf("%s: no exit after SIGTERM within the %s grace\n%s", run, grace, h.stderr.String())
		}
	}
}
