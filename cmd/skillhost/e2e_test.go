package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the skillhost binary built once for the end-to-end tests.
var binPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "skillhost-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "skillhost")
	build := exec.Command("go", "build", "-o", binPath, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building skillhost:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// hostProc is a running `skillhost serve`.
type hostProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	done   chan error
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var urlLine = regexp.MustCompile(`url=(https?://127\.0\.0\.1:\d+)`)

// startHost runs `skillhost serve` on a free loopback port with the given
// data and plugin folders and waits until /health answers.
func startHost(t *testing.T, data, plugins string, extra ...string) *hostProc {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data", data, "--plugins", plugins}, extra...)
	return startServe(t, exec.Command(binPath, args...))
}

// startServe starts cmd, a `skillhost serve --listen 127.0.0.1:0 …`, and
// waits until /health answers.
func startServe(t *testing.T, cmd *exec.Cmd) *hostProc {
	t.Helper()
	p := launch(t, cmd)
	var err error
	if !pollEvery(30*time.Second, 50*time.Millisecond, func() bool {
		var resp *http.Response
		if resp, err = http.Get(p.url + "/health"); err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}) {
		t.Fatalf("health never answered: %v\n%s", err, p.stderr.String())
	}
	waitCompiled(t, p)
	return p
}

// waitCompiled waits until no plugin of p is still on its first compile
// (a host serves while its plugins compile in the background; a call that
// comes first waits for its plugin within the call's deadline). Hosts
// whose /admin documents need a key are not waited for.
func waitCompiled(t *testing.T, p *hostProc) {
	t.Helper()
	var last string
	if !pollEvery(2*time.Minute, 50*time.Millisecond, func() bool {
		resp, err := http.Get(p.url + "/admin/plugins")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			return true
		}
		var doc struct {
			Plugins []struct{ Name, State string }
		}
		if json.NewDecoder(resp.Body).Decode(&doc) != nil {
			return false
		}
		for _, pl := range doc.Plugins {
			if pl.State == "loading" {
				last = pl.Name
				return false
			}
		}
		return true
	}) {
		t.Fatalf("plugin %s still compiling after 2 minutes\n%s", last, p.stderr.String())
	}
}

// pollEvery checks cond every every until it holds (true) or within has
// passed (false). It is host/internal/testutil.PollEvery, which this
// package cannot import.
func pollEvery(within, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// launch starts cmd, a `skillhost serve --listen 127.0.0.1:0 …`, and waits
// until it logs the address it serves.
func launch(t *testing.T, cmd *exec.Cmd) *hostProc {
	t.Helper()
	p := &hostProc{cmd: cmd, stderr: &syncBuffer{}, done: make(chan error, 1)}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(p.stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start skillhost: %v", err)
	}
	go func() { p.done <- cmd.Wait(); pw.Close() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := urlLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	select {
	case p.url = <-found:
	case err := <-p.done:
		t.Fatalf("skillhost exited early: %v\n%s", err, p.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("skillhost did not report its address:\n%s", p.stderr.String())
	}
	return p
}

// rpcResponse is a decoded JSON-RPC response.
type rpcResponse struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// call posts one JSON-RPC request and decodes the response.
func call(t *testing.T, url, method string, params any) rpcResponse {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/rpc", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	var out rpcResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: decode: %v", method, err)
	}
	return out
}

func mustResult(t *testing.T, r rpcResponse, v any) {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("unexpected error %d %s %v", r.Error.Code, r.Error.Message, r.Error.Data)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatalf("decode result %s: %v", r.Result, err)
	}
}

// runCLI runs the skillhost binary and returns stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binPath, args...)
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

func TestCLISessionAndContext(t *testing.T) {
	t.Parallel()
	h := startHost(t, t.TempDir(), t.TempDir())
	out, errOut, code := runCLI(t, "call", "--url", h.url, "_cleveragents/session/create", `{"session_id":"cli-1"}`)
	if code != 0 || !strings.Contains(out, `"status": "active"`) {
		t.Fatalf("session/create: code %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = runCLI(t, "call", "--url", h.url, "_cleveragents/context/set", `{"session_id":"cli-1","context_key":"k","value":{"n":1}}`)
	if code != 0 {
		t.Fatalf("context/set: code %d: %s", code, errOut)
	}
	out, _, code = runCLI(t, "call", "--url", h.url, "_cleveragents/context/get", `{"session_id":"cli-1","context_key":"k"}`)
	if code != 0 || !strings.Contains(out, `"n": 1`) {
		t.Fatalf("context/get: code %d\n%s", code, out)
	}
	if _, _, code = runCLI(t, "call", "--url", h.url, "_cleveragents/session/close", `{"session_id":"cli-1"}`); code != 0 {
		t.Fatalf("session/close: code %d", code)
	}
	out, errOut, code = runCLI(t, "call", "--url", h.url, "_cleveragents/context/get", `{"session_id":"cli-1","context_key":"k"}`)
	if code != 1 || !strings.Contains(out, "-32100") || !strings.Contains(errOut, "session_closed") {
		t.Fatalf("closed session: want exit 1 with -32100 session_closed; got %d\n%s\n%s", code, out, errOut)
	}
}

func TestCLIUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"bad url", []string{"call", "--url", "ftp://x", "m"}, 2},
		{"bad params json", []string{"call", "--url", "http://127.0.0.1:1", "m", "{nope"}, 2},
		{"unknown flag", []string{"serve", "--nope"}, 2},
		{"unknown command", []string{"frobnicate"}, 2},
		{"missing plugin folder", []string{"serve", "--plugins", "/no/such/dir", "--listen", "127.0.0.1:0", "--data", "/no/such/data"}, 2},
		{"unreachable host", []string{"call", "--url", "http://127.0.0.1:1", "m"}, 1},
		{"version", []string{"version"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, stderr, code := runCLI(t, tt.args...)
			if code != tt.want {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.want, stderr)
			}
			if tt.name == "missing plugin folder" && !strings.Contains(stderr, "--plugins /no/such/dir") {
				t.Errorf("stderr should name the flag: %q", stderr)
			}
			if code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr should be one line, got %q", stderr)
			}
		})
	}
}

// TestKill9KeepsAcknowledgedState: everything the host acknowledged before a
// SIGKILL is there after a restart on the same data directory.
func TestKill9KeepsAcknowledgedState(t *testing.T) {
	t.Parallel()
	data, plugins := t.TempDir(), t.TempDir()
	h := startHost(t, data, plugins)
	const n = 25
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("k9-%d", i)
		var created map[string]any
		mustResult(t, call(t, h.url, "_cleveragents/session/create", map[string]any{"session_id": id}), &created)
		var set map[string]any
		mustResult(t, call(t, h.url, "_cleveragents/context/set", map[string]any{"session_id": id, "context_key": "v", "value": i}), &set)
	}
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.done
	h2 := startHost(t, data, plugins)
	for i := 0; i < n; i++ {
		var got struct {
			Value int `json:"value"`
		}
		mustResult(t, call(t, h2.url, "_cleveragents/context/get", map[string]any{"session_id": fmt.Sprintf("k9-%d", i), "context_key": "v"}), &got)
		if got.Value != i {
			t.Errorf("session k9-%d: value %d, want %d", i, got.Value, i)
		}
	}
}

// TestSIGTERMShutsDownCleanly: SIGTERM exits 0 after a graceful shutdown.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	t.Parallel()
	h := startHost(t, t.TempDir(), t.TempDir())
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, h.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit 30s after SIGTERM")
	}
	if !strings.Contains(h.stderr.String(), "shutting down") {
		t.Errorf("no shutdown log:\n%s", h.stderr.String())
	}
}

// TestCardCommand: `skillhost card` prints the card of a plugin folder, and
// --agent one plugin's card; an unknown agent is a one-line error.
func TestCardCommand(t *testing.T) {
	t.Parallel()
	const plugins = "../../host/internal/a2a/testdata/plugins"
	out, errOut, code := runCLI(t, "card", "--plugins", plugins, "--data", t.TempDir())
	if code != 0 {
		t.Fatalf("card: exit %d: %s", code, errOut)
	}
	var card struct {
		Name   string `json:"name"`
		URL    string `json:"url"`
		Skills []struct {
			ID string `json:"id"`
		} `json:"skills"`
	}
	if err := json.Unmarshal([]byte(out), &card); err != nil {
		t.Fatalf("card output is not JSON: %v\n%s", err, out)
	}
	if card.Name == "" || card.URL == "" || len(card.Skills) == 0 {
		t.Errorf("card lacks name, url or skills: %s", out)
	}
	out, _, code = runCLI(t, "card", "--plugins", plugins, "--agent", "hostile")
	if code != 0 || !strings.Contains(out, `"name": "hostile"`) && !strings.Contains(out, `"name":"hostile"`) {
		t.Errorf("agent card: exit %d\n%s", code, out)
	}
	_, errOut, code = runCLI(t, "card", "--plugins", plugins, "--agent", "nope")
	if code != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("unknown agent: exit %d, stderr %q", code, errOut)
	}
}

// TestStdioPipelinedRequestsRunInOrder: in local mode a client may send a
// session/create and a call on that session back to back; the second sees
// the first (stdio is synchronous request-response by default).
func TestStdioPipelinedRequestsRunInOrder(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binPath, "serve", "--stdio", "--data", t.TempDir(), "--plugins", t.TempDir())
	var in bytes.Buffer
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"_cleveragents/session/create","params":{"session_id":"pipe"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"_cleveragents/context/set","params":{"session_id":"pipe","context_key":"k","value":1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"_cleveragents/context/get","params":{"session_id":"pipe","context_key":"k"}}`,
	} {
		fmt.Fprintf(&in, "%d\n%s\n", len(body), body)
	}
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve --stdio: %v\n%s", err, stderr.String())
	}
	br := bufio.NewReader(bytes.NewReader(out))
	for want := 1; want <= 3; want++ {
		var n int
		if _, err := fmt.Fscanf(br, "%d\n", &n); err != nil {
			t.Fatalf("frame %d header: %v (output %q)", want, err, out)
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(br, body); err != nil {
			t.Fatal(err)
		}
		_, _ = br.ReadString('\n')
		var resp struct {
			ID    int             `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || resp.ID != want || resp.Error != nil {
			t.Errorf("frame %d: %s", want, body)
		}
	}
}

// With auth.keys in the config file, `call` without a key is refused (401,
// exit 1) and `--api-key` / SKILLHOST_API_KEY authenticate; the serve
// command ignores SKILLHOST_API_KEY as a config key.
func TestCLIWithAPIKey(t *testing.T) {
	t.Parallel()
	const key = "cli-test-key-0123456789"
	sum := sha256.Sum256([]byte(key))
	cfg := filepath.Join(t.TempDir(), "skillhost.yaml")
	yaml := "auth:\n  keys:\n    - {id: cli, sha256: " + hex.EncodeToString(sum[:]) + ", scopes: [\"*\"]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, t.TempDir(), t.TempDir(), "--config", cfg)
	out, errOut, code := runCLI(t, "call", "--url", h.url, "_cleveragents/session/create", `{}`)
	if code != 1 || !strings.Contains(out, "-32105") || !strings.Contains(errOut, "unauthenticated") {
		t.Fatalf("no key: want exit 1 with -32105 unauthenticated; got %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = runCLI(t, "call", "--url", h.url, "--api-key", key, "_cleveragents/session/create", `{}`)
	if code != 0 || !strings.Contains(out, `"session_token": "skt_`) {
		t.Fatalf("--api-key: code %d\n%s\n%s", code, out, errOut)
	}
	cmd := exec.Command(binPath, "call", "--url", h.url, "ListTasks", `{}`)
	cmd.Env = append(os.Environ(), "SKILLHOST_API_KEY="+key)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("SKILLHOST_API_KEY: %v\n%s", err, b)
	}
	if strings.Contains(h.stderr.String(), key) {
		t.Error("the host logged the key")
	}
}
