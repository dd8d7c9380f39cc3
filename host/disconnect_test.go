package host_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/testutil"
)

// looperManifest loops under the longest deadline the default policy allows.
const looperManifest = `name: looper
version: 1.0.0
description: Loops until its deadline
wasm: hostile.wasm
limits: {timeout: 30s, memory: 16MiB, output: 64KiB, concurrency: 1}
skills:
  - {id: forever, function: loop, description: Never returns}
`

// metric reads one sample of the host's /metrics; -1 when absent.
func (th *testHost) metric(t *testing.T, series string) float64 {
	t.Helper()
	_, body := th.get(t, "/metrics")
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", series, v)
			}
			return f
		}
	}
	return -1
}

// TestClientDisconnectFreesInstance: a client that disconnects while its
// skill loops (deadline 30 s) gets its sandbox call stopped at once: the
// instance is freed and the call ends as canceled, not as a timeout.
func TestClientDisconnectFreesInstance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "looper", looperManifest)
	th := mustHost(t, dir)
	sid := th.mustSession(t)
	const running = "skillhost_sandbox_calls_running"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = th.tryCall(ctx, "_cleveragents/skill/execute", map[string]any{
			"session_id": sid, "skill_id": "forever", "skill_params": map[string]any{}, "timeout": 30000})
	}()
	testutil.Eventually(t, 20*time.Second, "the looping call to hold an instance", func() bool {
		return th.metric(t, running) == 1
	})
	cancel() // the client goes away
	<-ended
	testutil.Eventually(t, 20*time.Second, "the instance to be freed", func() bool {
		return th.metric(t, running) == 0
	})
	const series = `skillhost_rpc_calls_total{code="%d",method="_cleveragents/skill/execute",reason="%s"}`
	if got := th.metric(t, fmt.Sprintf(series, -32000, "canceled")); got != 1 {
		t.Errorf("canceled calls = %v, want 1", got)
	}
	if got := th.metric(t, fmt.Sprintf(series, -32104, "timeout")); got != -1 {
		t.Errorf("timed-out calls = %v, want none", got)
	}
}
