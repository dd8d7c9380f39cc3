package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The client commands take their URL from --url, else SKILLHOST_URL, else
// the default. Not parallel: it sets the environment.
func TestTargetResolve(t *testing.T) {
	tests := []struct {
		name, flag, env, want string
	}{
		{"default", "", "", defaultURL},
		{"environment", "", "http://10.0.0.1:9000", "http://10.0.0.1:9000"},
		{"flag wins", "http://127.0.0.1:7000", "http://10.0.0.1:9000", "http://127.0.0.1:7000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SKILLHOST_URL", tt.env)
			to := target{url: tt.flag}
			to.resolve()
			if to.url != tt.want {
				t.Errorf("url = %q, want %q", to.url, tt.want)
			}
		})
	}
}

// SKILLHOST_URL is a client setting: `serve` starts with it set (its config
// layer does not take it for a key), and `call` without --url reaches the
// host it names.
func TestSkillhostURL(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binPath, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--plugins", t.TempDir())
	cmd.Env = append(os.Environ(), "SKILLHOST_URL=http://127.0.0.1:1")
	h := startServe(t, cmd)
	call := exec.Command(binPath, "call", "_cleveragents/session/create", `{"session_id":"by-env"}`)
	call.Env = append(os.Environ(), "SKILLHOST_URL="+h.url)
	out, err := call.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"session_id": "by-env"`) {
		t.Fatalf("call via SKILLHOST_URL: %v\n%s", err, out)
	}
}

// A reply that is not JSON-RPC (here every request times out reading, as
// with a unit-less read_timeout before units were required) is printed as
// one plain line naming the HTTP status, never a JSON decoding error.
func TestCallPrintsHTTPErrorsPlainly(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "skillhost.yaml")
	if err := os.WriteFile(cfg, []byte("http:\n  read_timeout: 1ns\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := launch(t, exec.Command(binPath, "serve", "--config", cfg, "--listen", "127.0.0.1:0",
		"--data", t.TempDir(), "--plugins", t.TempDir()))
	_, errOut, code := runCLI(t, "call", "--url", h.url, "_cleveragents/session/create", `{}`)
	line := strings.TrimSpace(errOut)
	if code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, "HTTP 408 Request Timeout") ||
		strings.Contains(line, "unmarshal") {
		t.Errorf("exit %d, stderr %q; want one line with HTTP 408 Request Timeout", code, errOut)
	}
}
