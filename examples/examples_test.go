package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
)

// bin holds the example binaries and skillhost, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "skillhost-examples-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	goTool, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintln(os.Stderr, "the examples test builds the examples with the go tool:", err)
		return 1
	}
	build := exec.Command(goTool, "build", "-o", dir+string(os.PathSeparator),
		"./client", "./a2a-client", "./misbehaving", "./stdio", "./remote", "../cmd/skillhost")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the examples:", err)
		return 1
	}
	bin = dir
	return m.Run()
}

// echoManifest is the first-party echo plugin's manifest; the test serves it
// with the echo export of the tiny fixture module, so it needs no Go build.
const echoManifest = `name: echo
version: 1.0.0
description: Returns its input unchanged
wasm: echo.wasm
skills:
  - id: echo
    name: Echo
    description: Returns its JSON input unchanged
    examples: ['{"message":"hello"}']
`

// mustHost starts a real host on 127.0.0.1:0 serving pluginDir and returns
// its base URL. Serve runs until the test ends.
func mustHost(t *testing.T, pluginDir string) string {
	t.Helper()
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.Data = t.TempDir()
	cfg.Plugins = pluginDir
	cfg.HotReload = false
	ctx, cancel := context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := host.New(ctx, cfg, host.WithVersion("example-test"), host.WithLogger(logger))
	if err != nil {
		cancel()
		t.Fatalf("host.New: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + h.Addr().String()
}

// mustEchoPlugins writes a plugin folder holding the echo plugin.
func mustEchoPlugins(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	wasm, err := os.ReadFile("../host/internal/sandbox/testdata/hostile.wasm")
	if err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "echo")
	if err := os.Mkdir(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "echo.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pdir, "plugin.yaml"), []byte(echoManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runExample runs an example binary and returns its stdout lines.
func runExample(t *testing.T, name string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\nstdout:\n%s\nstderr:\n%s", name, args, err, stdout.String(), stderr.String())
	}
	return strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
}

// matchLines checks each line against the pattern at the same position.
func matchLines(t *testing.T, lines, patterns []string) {
	t.Helper()
	if len(lines) != len(patterns) {
		t.Errorf("got %d lines, want %d:\n%s", len(lines), len(patterns), strings.Join(lines, "\n"))
	}
	for i := 0; i < min(len(lines), len(patterns)); i++ {
		if !regexp.MustCompile("^" + patterns[i] + "$").MatchString(lines[i]) {
			t.Errorf("line %d = %q, want it to match %q", i+1, lines[i], patterns[i])
		}
	}
}

func TestClients(t *testing.T) {
	t.Parallel()
	url := mustHost(t, mustEchoPlugins(t))

	t.Run("client", func(t *testing.T) {
		t.Parallel()
		lines := runExample(t, "client", "--url", url)
		matchLines(t, lines, []string{
			`session created: (sess_\S+)`,
			`context greeting = "hello from the client"`,
			`skill/execute echo -> \{"message":"hello"\} \(plugin echo@1\.0\.0, \d+ ms\)`,
			`agent/call echo\.echo -> \{"message":"hi, agent"\}`,
			`session closed: sess_\S+`,
		})
		// The session the example closed is closed on the host too.
		sid := strings.TrimPrefix(lines[0], "session created: ")
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"_cleveragents/context/get","params":{"session_id":%q,"context_key":"greeting"}}`, sid)
		resp, err := http.Post(url+"/rpc", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var msg struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil || msg.Error.Code != -32100 {
			t.Errorf("context/get on the example's closed session: code %d, %v; want -32100", msg.Error.Code, err)
		}
	})

	t.Run("a2a-client", func(t *testing.T) {
		t.Parallel()
		lines := runExample(t, "a2a-client", "--url", url, "--skill", "echo", "--input", `{"message":"hello over A2A","n":2}`)
		matchLines(t, lines, []string{
			`agent: \S.* \(1 skills\)`,
			`  skill echo: Returns its JSON input unchanged`,
			`task \S+: TASK_STATE_COMPLETED`,
			`artifact: \{"message":"hello over A2A","n":2\}`,
		})
	})
}

func TestMisbehaving(t *testing.T) {
	t.Parallel()
	url := mustHost(t, "misbehaving/plugins")
	lines := runExample(t, "misbehaving", "--url", url)
	matchLines(t, lines, []string{
		`looper/infinite-loop +-32104 timeout +\(\d+ ms\)`,
		`slow-starter/never-ready +-32104 timeout +\(\d+ ms\)`,
		`memory-hog/eat-memory +-32106 memory_limit +\(\d+ ms\)`,
		`chatterbox/huge-output +-32106 output_limit +\(\d+ ms\)`,
		`crasher/crash +-32103 trap +\(\d+ ms\)`,
		`crasher/stack-overflow +-32106 memory_limit +\(\d+ ms\)`,
		`complainer/complain +-32103 plugin_error +\(\d+ ms\)`,
		`polite/polite-echo served [1-9]\d* calls meanwhile, 0 failed`,
		`host still serving: yes`,
	})
}

func TestStdio(t *testing.T) {
	t.Parallel()
	lines := runExample(t, "stdio", "--skillhost", filepath.Join(bin, "skillhost"),
		"--plugins", mustEchoPlugins(t), "--data", t.TempDir())
	matchLines(t, lines, []string{
		`session created: sess_\S+ \(active\)`,
		`context mode = "local"`,
		`session closed: sess_\S+ \(closed\)`,
		`call on the closed session: -32100 session_closed`,
		`host exited cleanly`,
	})
}

// TestDevConfig checks that the configuration `make run` uses loads and
// grants what the first-party fetch plugin requests.
func TestDevConfig(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(config.Sources{File: "config/dev.yaml", Environ: []string{}})
	if err != nil {
		t.Fatalf("config.Load(config/dev.yaml): %v", err)
	}
	if diff := cmp.Diff([]string{"example.com", "*.example.org"}, cfg.Policy.AllowedHostPatterns); diff != "" {
		t.Errorf("allowed_host_patterns (-want +got):\n%s", diff)
	}
}
