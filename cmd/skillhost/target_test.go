package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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

// A reply that is not JSON-RPC is printed as one plain line naming the HTTP
// status, never a JSON decoding error. The server answers as a host whose
// read_timeout is too short for any request (a unit-less "10" before units
// were required): 408 with {"error":"Request Timeout"}. (A real host with
// such a timeout sometimes closes the connection instead of answering, so
// the reply is served here.)
func TestCallPrintsHTTPErrorsPlainly(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusRequestTimeout)
		_, _ = w.Write([]byte(`{"error":"Request Timeout"}`))
	}))
	defer srv.Close()
	for _, args := range [][]string{
		{"call", "--url", srv.URL, "_cleveragents/session/create", `{}`},
		{"status", "--url", srv.URL},
	} {
		_, errOut, code := runCLI(t, args...)
		line := strings.TrimSpace(errOut)
		want := "HTTP 408 Request Timeout: {\"error\":\"Request Timeout\"}"
		if code != 1 || strings.Contains(line, "\n") || !strings.Contains(line, want) || strings.Contains(line, "unmarshal") {
			t.Errorf("%s: exit %d, stderr %q; want one line with %s", args[0], code, errOut, want)
		}
	}
}
