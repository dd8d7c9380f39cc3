package host_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
)

// mcpManifest has a quick skill, one with an input schema, and one that
// loops past its 1s limit.
const mcpManifest = `name: tools
version: 1.0.0
description: MCP test skills
wasm: hostile.wasm
limits: {timeout: 1s, memory: 16MiB, output: 64KiB, concurrency: 4}
skills:
  - {id: echo, function: echo, description: Returns its input unchanged}
  - id: strict-echo
    description: Echo that only takes {"n":<number>}
    function: echo
    input_schema: {type: object, properties: {n: {type: number}}, required: [n]}
  - {id: spin, function: loop, description: Never returns}
`

// toolNames lists the session's tools.
func toolNames(ctx context.Context, t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// checkTools drives an MCP session through the official Go SDK client:
// list, a call with structured output, schema-checked input, a sandbox
// timeout as a tool error with its reason.
func checkTools(ctx context.Context, t *testing.T, cs *sdk.ClientSession) {
	t.Helper()
	if diff := cmp.Diff([]string{"echo", "spin", "strict-echo"}, toolNames(ctx, t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatalf("tools/call echo: %v", err)
	}
	if res.IsError {
		t.Fatalf("echo is an error: %+v", res.Content)
	}
	if diff := cmp.Diff(map[string]any{"text": "hi"}, res.StructuredContent); diff != "" {
		t.Errorf("structured output (-want +got):\n%s", diff)
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != `{"text":"hi"}` {
		t.Errorf("text content %+v", res.Content)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "strict-echo", Arguments: map[string]any{"n": "not a number"}})
	if err != nil || !res.IsError {
		t.Errorf("strict-echo with a bad input: %+v, %v; want a tool error", res, err)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "spin", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call spin: %v", err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if !res.IsError || sc["reason"] != "timeout" || sc["code"] != float64(-32104) {
		t.Errorf("spin: isError %v, structured %v; want a tool error with reason timeout, code -32104", res.IsError, res.StructuredContent)
	}
}

// MCP over Streamable HTTP (/mcp) with the official Go SDK client; the
// tool list follows a drop-in plugin and the client hears list_changed.
func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", mcpManifest)
	th := mustHost(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	changed := make(chan struct{}, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "skillhost-test", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp", HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	checkTools(ctx, t, cs)

	// Drop in a plugin: the list changes and the client is told.
	mustPlugin(t, dir, "more", `name: more
version: 1.0.0
description: dropped in
wasm: hostile.wasm
skills:
  - {id: more-echo, function: echo, description: Returns its input unchanged}
`)
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed after a drop-in")
	}
	if !waitFor(30*time.Second, func() bool { return slices.Contains(toolNames(ctx, t, cs), "more-echo") }) {
		t.Errorf("the dropped-in skill is not listed: %v", toolNames(ctx, t, cs))
	}
}

// MCP on stdio (serve --mcp-stdio): the same tools for a local client.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", mcpManifest)
	cfg := config.Defaults()
	cfg.Listen, cfg.MCPStdio = "", true
	cfg.Data, cfg.Plugins = t.TempDir(), dir
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h, err := host.New(ctx, cfg, host.WithVersion("9.9.9-test"), host.WithLogger(slog.New(slog.DiscardHandler)), host.WithStdio(inR, outW))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	client := sdk.NewClient(&sdk.Implementation{Name: "skillhost-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	checkTools(ctx, t, cs)
	_ = cs.Close()
	_ = inW.Close() // end of stdin: the host shuts down
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-ctx.Done():
		t.Error("Serve did not return after stdin closed")
	}
}

// bearer adds an API key to every request of an MCP client.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

// /mcp has the access rules of /rpc: a key is required when keys are
// configured, its scopes limit the tools it may call (a tool error with
// reason scope_denied), and its session is not another key's.
func TestMCPWithKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", mcpManifest)
	echoer, other := newKey(t, "echoer", "skill:echo"), newKey(t, "other", "*")
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Auth.Keys = []config.AuthKey{echoer.Entry, other.Entry} })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(key string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer{key: key, base: httpClient.Transport}}
		if key == "" {
			hc = httpClient
		}
		return sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
			Connect(ctx, &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	}
	if cs, err := connect(""); err == nil {
		_ = cs.Close()
		t.Fatal("connected without a key")
	}
	cs, err := connect(echoer.Secret)
	if err != nil {
		t.Fatalf("connect with a key: %v", err)
	}
	defer cs.Close()
	// tools/list shows what the key may call, as the extended card does.
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if diff := cmp.Diff([]string{"echo"}, names); diff != "" {
		t.Errorf("tools/list for a key with skill:echo (-want +got):\n%s", diff)
	}
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"a": 1.0}}); err != nil || res.IsError {
		t.Fatalf("echo in scope: %+v, %v", res, err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "spin", Arguments: map[string]any{}})
	sc, _ := res.StructuredContent.(map[string]any)
	if err != nil || !res.IsError || sc["reason"] != "scope_denied" {
		t.Errorf("spin out of scope: %+v, %v; want a tool error scope_denied", res, err)
	}
	// Another key presenting this session's id is answered as if it did not exist.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, th.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Authorization", "Bearer "+other.Secret)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another key with this session's id: HTTP %d, want 404", resp.StatusCode)
	}
}
