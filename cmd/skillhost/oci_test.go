package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// startRegistry serves go-containerregistry's in-memory registry on
// 127.0.0.1 behind basic auth (user ci, password pw) and returns its
// host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ci" || p != "pw" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// runWith runs the binary with extra environment and standard input.
func runWith(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// plugin push and pull through a registry that wants credentials (flags or
// the docker config file); a host serves the pushed plugin from
// sources.oci with an operator secret given in its YAML file, which
// `plugins`, `status` and the host's logs never show.
func TestPluginPushPullAndServe(t *testing.T) {
	t.Parallel()
	const secret = "cli-s3cr3t-5e8a1"
	reg := startRegistry(t)
	ref := reg + "/team/vault:1"
	noCreds := []string{"DOCKER_CONFIG=" + t.TempDir()}
	dockerDir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("ci:pw"))
	if err := os.WriteFile(filepath.Join(dockerDir, "config.json"), []byte(`{"auths":{"`+reg+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	withCreds := []string{"DOCKER_CONFIG=" + dockerDir}

	src := filepath.Join(t.TempDir(), "vault")
	wasm, err := os.ReadFile("../../host/testdata/config_echo.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for file, body := range map[string]string{"config_echo.wasm": string(wasm), "plugin.yaml": "name: vault\nversion: 1.0.0\n" +
		"description: echoes its api_key\nwasm: config_echo.wasm\nskills:\n  - {id: vault-get, function: get, description: its api_key}\n"} {
		if err := os.MkdirAll(src, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, file), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, errOut, code := runWith(t, noCreds, "", "plugin", "push", src, ref, "--plain-http"); code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("push without credentials: exit %d, stderr %q; want exit 1 with one line", code, errOut)
	}
	if _, errOut, code := runWith(t, noCreds, "", "plugin", "push", src, ref, "--username", "ci"); code != 2 {
		t.Errorf("--username without --password-stdin: exit %d (%s), want 2", code, errOut)
	}
	out, errOut, code := runWith(t, noCreds, "pw\n", "plugin", "push", src, ref, "--plain-http", "--username", "ci", "--password-stdin")
	if code != 0 || !strings.Contains(out, "pushed vault 1.0.0 to "+ref) || !strings.Contains(out, "(pin it: "+reg+"/team/vault@sha256:") {
		t.Fatalf("push: exit %d\n%s%s", code, out, errOut)
	}
	pulled := filepath.Join(t.TempDir(), "pulled")
	out, errOut, code = runWith(t, withCreds, "", "plugin", "pull", ref, pulled, "--plain-http")
	if code != 0 || !strings.Contains(out, "pulled vault 1.0.0 from "+ref) {
		t.Fatalf("pull: exit %d\n%s%s", code, out, errOut)
	}
	if got, err := os.ReadFile(filepath.Join(pulled, "config_echo.wasm")); err != nil || !bytes.Equal(got, wasm) {
		t.Errorf("the pulled module differs from the pushed one (%v)", err)
	}
	if _, errOut, code := runWith(t, withCreds, "", "plugin", "pull", ref, pulled, "--plain-http"); code != 1 || !strings.Contains(errOut, "not empty") {
		t.Errorf("pull into a full folder: exit %d, stderr %q", code, errOut)
	}

	cfg := filepath.Join(t.TempDir(), "skillhost.yaml")
	yaml := "plugins:\n  dir: " + t.TempDir() + "\n  vault:\n    config: {units: metric}\n    secrets: {api_key: \"env:T26_CLI_SECRET\"}\n" +
		"sources:\n  oci:\n    - {ref: \"" + ref + "\", plain_http: true}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(binPath, "serve", "--listen", "127.0.0.1:0", "--data", t.TempDir(), "--config", cfg)
	serve.Env = append(os.Environ(), append(withCreds, "T26_CLI_SECRET="+secret)...)
	h := startServe(t, serve)
	var res struct {
		Output string `json:"output"`
	}
	call(t, h.url, "_cleveragents/session/create", map[string]any{"session_id": "s"})
	mustResult(t, call(t, h.url, "_cleveragents/skill/execute", map[string]any{"session_id": "s", "skill_id": "vault-get", "skill_params": map[string]any{}}), &res)
	if res.Output != secret {
		t.Errorf("vault-get read %q, want its operator secret", res.Output)
	}
	plugins, _, _ := runCLI(t, "plugins", "--url", h.url)
	for _, want := range []string{"vault  1.0.0    loaded", "oci", "from OCI registries (sources.oci):\n  vault  " + ref + "  sha256:",
		"vault  config: units  secrets: api_key=set"} {
		if !strings.Contains(plugins, want) {
			t.Errorf("plugins output lacks %q:\n%s", want, plugins)
		}
	}
	status, _, _ := runCLI(t, "status", "--url", h.url, "--window", "0")
	pluginsJSON, _, _ := runCLI(t, "plugins", "--url", h.url, "--json")
	statusJSON, _, _ := runCLI(t, "status", "--url", h.url, "--json")
	card, _, _ := runCLI(t, "card", "--config", cfg)
	for what, text := range map[string]string{"plugins": plugins, "status": status, "plugins --json": pluginsJSON,
		"status --json": statusJSON, "card": card, "serve's logs": h.stderr.String()} {
		if strings.Contains(text, secret) {
			t.Errorf("%s shows the secret:\n%s", what, text)
		}
	}
}
