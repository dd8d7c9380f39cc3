package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
)

// stdioPeer speaks the stdio framing to a host.
type stdioPeer struct {
	w io.Writer
	r *bufio.Reader
}

func (p *stdioPeer) call(t *testing.T, method string, params any) rpcResponse {
	t.Helper()
	body := rpcBody(method, params)
	if _, err := fmt.Fprintf(p.w, "%d\n%s", len(body), body); err != nil {
		t.Fatal(err)
	}
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		n, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("frame header %q", line)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(p.r, frame); err != nil {
			t.Fatal(err)
		}
		var r rpcResponse
		if err := json.Unmarshal(frame, &r); err != nil {
			t.Fatalf("frame %s: %v", frame, err)
		}
		return r
	}
}

// stdio (local mode) is trusted: with keys configured it needs none, and it
// is one principal of its own, so HTTP keys do not see its sessions and it
// does not see theirs.
func TestStdioIsATrustedPrincipalOfItsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	key := newKey(t, "ci", "*")
	cfg := config.Defaults()
	cfg.Listen, cfg.Stdio, cfg.Data, cfg.Plugins = "127.0.0.1:0", true, t.TempDir(), dir
	cfg.Auth.Keys = []config.AuthKey{key.Entry}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	h, err := host.New(ctx, cfg, host.WithLogger(quietLogger()), host.WithStdio(inR, outW))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
		_ = outR.Close()
	})
	th := &testHost{URL: "http://" + h.Addr().String(), h: h}
	peer := &stdioPeer{w: inW, r: bufio.NewReader(outR)}

	r := peer.call(t, "_cleveragents/session/create", map[string]any{"session_id": "from-stdio"})
	if r.Error != nil {
		t.Fatalf("stdio needs no key: %+v", r.Error)
	}
	if strings.Contains(string(r.Result), "session_token") {
		t.Errorf("stdio got a session token: %s", r.Result)
	}
	if r := peer.call(t, "_cleveragents/skill/execute", map[string]any{"session_id": "from-stdio", "skill_id": "strict-echo", "skill_params": map[string]any{"n": 1}}); r.Error != nil {
		t.Errorf("stdio holds every scope: %+v", r.Error)
	}
	th.mustAs(t, key.Secret, "_cleveragents/session/create", map[string]any{"session_id": "from-http"})
	wantRefused(t, th.as(t, key.Secret, "_cleveragents/context/get", map[string]any{"session_id": "from-stdio", "context_key": "k"}), 200, -32100, "session_not_found")
	r = peer.call(t, "_cleveragents/context/get", map[string]any{"session_id": "from-http", "context_key": "k"})
	if r.Error == nil || r.Error.Code != -32100 || r.Error.reason() != "session_not_found" {
		t.Errorf("stdio sees the key's session: %+v %s", r.Error, r.Result)
	}
}
