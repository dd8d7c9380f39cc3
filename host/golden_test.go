package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// updateGolden rewrites testdata/golden/*.golden from what the host answers:
// go test ./host/ -run 'TestWireGolden|TestMCPGolden' -args -update
var updateGolden = flag.Bool("update", false, "rewrite the wire-format golden files from the host's answers")

// goldenManifest is the plugin the wire-format golden files talk to.
const goldenManifest = `name: tools
version: 1.0.0
description: Well-behaved test skills
wasm: hostile.wasm
limits: {timeout: 2s, memory: 16MiB, output: 64KiB, concurrency: 4}
skills:
  - id: echo
    name: Echo
    description: Returns its input unchanged
    tags: [test]
    function: echo
    examples: ['{"text":"hi"}']
  - id: strict-echo
    description: Echo that only takes {"n":<number>}
    function: echo
    input_schema: {type: object, properties: {n: {type: number}}, required: [n]}
  - id: boom
    description: Traps
    function: trap
`

// TestWireGolden pins the host's wire formats in the manner of caddy's
// adapt tests: each testdata/golden/<case>.golden holds a request ("METHOD
// PATH", then its body), a "---" line, and the expected answer (the HTTP
// status, then the body, JSON re-indented with volatile values — ids,
// times, durations, the host's address — replaced by placeholders). The
// cases run in name order against one host; a request may name the task of
// the last answer that carried one as {{task}}. A2A v1.0 and v0.3 over
// JSON-RPC, the HTTP+JSON binding with its google.rpc.Status errors, the
// Agent Cards and the _cleveragents dialect are covered; -update rewrites
// the files.
func TestWireGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/golden/*.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	slices.Sort(files)
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", goldenManifest)
	th := mustHost(t, dir)
	vars := map[string]string{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".golden")
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		req, want, ok := bytes.Cut(raw, []byte("\n---\n"))
		if !ok {
			t.Fatalf("%s: no --- separator line", f)
		}
		method, path, body := parseGoldenRequest(t, f, string(req), vars)
		status, got := th.exchange(t, method, path, body)
		remember(vars, got)
		answer := strconv.Itoa(status) + "\n" + normalizeWire(got, th.URL)
		if *updateGolden {
			if err := os.WriteFile(f, append(append(req, "\n---\n"...), answer...), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if diff := cmp.Diff(string(want), answer); diff != "" {
			t.Errorf("%s (-golden +host):\n%s", name, diff)
		}
	}
}

// parseGoldenRequest reads "METHOD PATH\nbody" with {{name}} replaced.
func parseGoldenRequest(t *testing.T, file, req string, vars map[string]string) (method, path string, body []byte) {
	t.Helper()
	for k, v := range vars {
		req = strings.ReplaceAll(req, "{{"+k+"}}", v)
	}
	line, rest, _ := strings.Cut(req, "\n")
	method, path, ok := strings.Cut(line, " ")
	if !ok {
		t.Fatalf("%s: the first line is %q, want METHOD PATH", file, line)
	}
	return method, path, []byte(rest)
}

// exchange sends one request and returns the status and body.
func (th *testHost) exchange(t *testing.T, method, path string, body []byte) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var rd io.Reader
	if len(bytes.TrimSpace(body)) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, th.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// remember keeps the id of a task an answer carries as {{task}}.
func remember(vars map[string]string, body []byte) {
	var v struct {
		ID     string `json:"id"`
		Result struct {
			ID   string `json:"id"`
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if json.Unmarshal(body, &v) != nil {
		return
	}
	for _, id := range []string{v.Result.Task.ID, v.Task.ID, v.Result.ID, v.ID} {
		if uuidish.MatchString(id) {
			vars["task"] = id
			return
		}
	}
}

var (
	uuidish   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	timeish   = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$`)
	volatiles = map[string]bool{"execution_time_ms": true, "duration_ms": true, "duration_us": true, "instance": true, "request_id": true, "etag": true}
)

// normalizeWire re-indents a JSON body with volatile values replaced; an
// SSE stream gets the same for each event's data, keep-alive comments
// dropped; a body that is neither is returned as it is.
func normalizeWire(body []byte, base string) string {
	if bytes.HasPrefix(body, []byte("data:")) || bytes.HasPrefix(body, []byte(":")) || bytes.HasPrefix(body, []byte("event:")) {
		var out strings.Builder
		for _, line := range strings.Split(string(body), "\n") {
			switch {
			case strings.HasPrefix(line, "data:"):
				out.WriteString("data: " + normalizeWire([]byte(strings.TrimSpace(strings.TrimPrefix(line, "data:"))), base))
			case strings.HasPrefix(line, "event:"), strings.HasPrefix(line, "id:"):
				out.WriteString(line + "\n")
			}
		}
		return out.String()
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(body)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(scrub(v, "", base))
	return out.String()
}

func scrub(v any, key, base string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = scrub(e, k, base)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = scrub(e, key, base)
		}
		return x
	case string:
		switch {
		case volatiles[key] && x != "":
			return "<" + key + ">"
		case uuidish.MatchString(x):
			return "<uuid>"
		case timeish.MatchString(x):
			return "<time>"
		}
		return strings.ReplaceAll(x, base, "<base>")
	case json.Number:
		if volatiles[key] {
			return "<" + key + ">"
		}
	}
	return v
}

// TestMCPGolden pins MCP's shapes, through the official Go SDK's client:
// each testdata/golden/mcp/<case>.golden holds "tools/list" or "tools/call
// NAME" with the arguments' JSON, a "---" line, and the result as the client
// decoded it, normalized as in TestWireGolden (-update rewrites them).
func TestMCPGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/golden/mcp/*.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	slices.Sort(files)
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", goldenManifest)
	th := mustHost(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "golden", Version: "1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp", HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		req, want, ok := bytes.Cut(raw, []byte("\n---\n"))
		if !ok {
			t.Fatalf("%s: no --- separator line", f)
		}
		line, args, _ := strings.Cut(string(req), "\n")
		var res any
		switch op, name, _ := strings.Cut(line, " "); op {
		case "tools/list":
			res, err = cs.ListTools(ctx, nil)
		case "tools/call":
			var a map[string]any
			if err := json.Unmarshal([]byte(args), &a); err != nil {
				t.Fatalf("%s: arguments: %v", f, err)
			}
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: a})
		default:
			t.Fatalf("%s: unknown operation %q", f, op)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		b, _ := json.Marshal(res)
		answer := normalizeWire(b, th.URL)
		if *updateGolden {
			if err := os.WriteFile(f, append(append(req, "\n---\n"...), answer...), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if diff := cmp.Diff(string(want), answer); diff != "" {
			t.Errorf("%s (-golden +host):\n%s", filepath.Base(f), diff)
		}
	}
}
