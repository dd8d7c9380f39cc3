package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/testutil"
)

// hostileManifest exposes every misbehaviour of the fixture module as a
// skill. The deadline is generous: a stack overflow takes wazero up to ~5 s
// under -race, and must be reported as memory_limit (the call stack is host
// memory), not a timeout.
const hostileManifest = `name: hostile
version: 1.0.0
description: Misbehaving skills
wasm: hostile.wasm
limits: {timeout: 20s, memory: 32MiB, output: 64KiB, concurrency: 8}
skills:
  - {id: hostile-echo, function: echo, description: The one well-behaved export}
  - {id: loop, function: loop, description: Never returns}
  - {id: trap, function: trap, description: Executes unreachable}
  - {id: grow, function: grow, description: Grows memory until refused}
  - {id: recurse, function: recurse, description: Unbounded recursion}
  - {id: huge-output, function: huge_output, description: Sets an 8 MiB output}
  - {id: fail, function: fail, description: Reports an error}
`

// spinnerManifest loops under a short plugin deadline (no per-call timeout).
const spinnerManifest = `name: spinner
version: 1.0.0
description: Loops under a short deadline
wasm: hostile.wasm
limits: {timeout: 500ms, memory: 16MiB, output: 64KiB, concurrency: 2}
skills:
  - {id: spin, function: loop, description: Never returns}
  - {id: spin-echo, function: echo, description: Returns its input}
`

// starterManifest wraps start_loop.wasm, whose _initialize never returns.
const starterManifest = `name: starter
version: 1.0.0
description: Initialisation never ends
wasm: start_loop.wasm
limits: {timeout: 500ms, memory: 1MiB}
skills:
  - {id: start-run, function: run, description: Never reached}
`

// bigDeclManifest wraps big_decl.wasm, which declares 4 GiB of memory.
const bigDeclManifest = `name: big-decl
version: 1.0.0
description: Declares more memory than allowed
wasm: big_decl.wasm
limits: {memory: 16MiB}
skills:
  - {id: big-run, function: run, description: Never loaded}
`

// margin is how late past its deadline a hostile call may end: generous for
// -race on a busy 2-core machine.
const margin = 5 * time.Second

// TestHostileMatrix runs every hostile skill at once while a stream of echo
// calls hits another plugin: each hostile call gets its own code and reason,
// every echo succeeds, the hostile plugin serves a normal call afterwards and
// no goroutine is left behind. Not parallel: it counts goroutines.
func TestHostileMatrix(t *testing.T) {
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	mustPlugin(t, dir, "hostile", hostileManifest)
	mustPlugin(t, dir, "spinner", spinnerManifest)
	mustPluginWasm(t, dir, "starter", "start_loop.wasm", starterManifest)
	mustPluginWasm(t, dir, "big-decl", "big_decl.wasm", bigDeclManifest)
	th := mustHost(t, dir)
	sid := th.mustSession(t)
	exec := func(ctx context.Context, skill string, params any, timeoutMS float64) (rpcResponse, error) {
		p := map[string]any{"session_id": sid, "skill_id": skill, "skill_params": params}
		if timeoutMS > 0 {
			p["timeout"] = timeoutMS
		}
		return th.tryCall(ctx, "_cleveragents/skill/execute", p)
	}
	mustEcho := func(t *testing.T, skill, text string) {
		t.Helper()
		r, err := exec(context.Background(), skill, map[string]any{"text": text}, 0)
		if err != nil || r.Error != nil || string(r.Result) == "" {
			t.Fatalf("%s: %v %+v", skill, err, r.Error)
		}
		var res struct{ Output map[string]any }
		if err := json.Unmarshal(r.Result, &res); err != nil || res.Output["text"] != text {
			t.Fatalf("%s returned %s", skill, r.Result)
		}
	}
	// Warm up every plugin and the HTTP worker pool before the baseline.
	var warm sync.WaitGroup
	for i := 0; i < 8; i++ {
		warm.Add(1)
		go func() {
			defer warm.Done()
			for _, s := range []string{"echo", "hostile-echo", "spin-echo"} {
				_, _ = exec(context.Background(), s, map[string]any{"text": "warm"}, 0)
			}
		}()
	}
	warm.Wait()
	httpClient.CloseIdleConnections()
	baseline := testutil.SettledGoroutines() // once the closed connections' goroutines are gone

	stop := make(chan struct{})
	echoDone := make(chan struct{})
	var echoErr error
	echoN := 0
	go func() {
		defer close(echoDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				echoN = i
				return
			default:
			}
			text := fmt.Sprintf("echo %d", i)
			r, err := exec(context.Background(), "echo", map[string]any{"text": text}, 0)
			if err == nil && r.Error != nil {
				err = fmt.Errorf("error %d %v", r.Error.Code, r.Error.Data)
			}
			if err == nil && !json.Valid(r.Result) {
				err = fmt.Errorf("result %s", r.Result)
			}
			var res struct{ Output map[string]any }
			if err == nil {
				if jerr := json.Unmarshal(r.Result, &res); jerr != nil || res.Output["text"] != text {
					err = fmt.Errorf("echo %d returned %s", i, r.Result)
				}
			}
			if err != nil {
				echoErr = err
				return
			}
		}
	}()

	tests := []struct {
		name      string
		skill     string
		timeoutMS float64       // per-call timeout; 0 = the plugin limit
		deadline  time.Duration // for timeouts: how soon it must end
		code      int
		reason    string
	}{
		{"per-call timeout wins over the 20s limit", "loop", 300, 300 * time.Millisecond, -32104, "timeout"},
		{"plugin limit timeout", "spin", 0, 500 * time.Millisecond, -32104, "timeout"},
		{"per-call timeout larger than the limit", "spin", 60_000, 500 * time.Millisecond, -32104, "timeout"},
		{"initialisation loop", "start-run", 0, 500 * time.Millisecond, -32104, "timeout"},
		{"memory hog", "grow", 0, 0, -32106, "memory_limit"},
		{"huge output", "huge-output", 0, 0, -32106, "output_limit"},
		{"trap", "trap", 0, 0, -32103, "trap"},
		{"recursion", "recurse", 0, 0, -32106, "memory_limit"},
		{"plugin error", "fail", 0, 0, -32103, "plugin_error"},
	}
	var wg sync.WaitGroup
	results := make([]rpcResponse, len(tests))
	took := make([]time.Duration, len(tests))
	errs := make([]error, len(tests))
	for i, tt := range tests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			results[i], errs[i] = exec(ctx, tt.skill, map[string]any{}, tt.timeoutMS)
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	close(stop)
	<-echoDone

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			wantError(t, results[i], tt.code, tt.reason)
			if sid2, _ := results[i].Error.Data["session_id"].(string); sid2 != sid {
				t.Errorf("error data session_id = %q, want %q", sid2, sid)
			}
			if tt.deadline > 0 && took[i] > tt.deadline+margin {
				t.Errorf("took %v, deadline %v", took[i], tt.deadline)
			}
		})
	}
	if echoErr != nil {
		t.Errorf("concurrent echo failed while hostile calls ran: %v", echoErr)
	}
	if echoN == 0 {
		t.Error("no echo call completed during the hostile calls")
	}
	t.Run("hostile plugins still serve", func(t *testing.T) {
		mustEcho(t, "hostile-echo", "alive")
		mustEcho(t, "spin-echo", "alive")
		mustEcho(t, "echo", "alive")
	})
	t.Run("module declaring too much memory is refused at load", func(t *testing.T) {
		r, err := exec(context.Background(), "big-run", map[string]any{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		wantError(t, r, -32602, "unknown_skill")
		_, body := th.get(t, "/metrics")
		if !strings.Contains(string(body), "skillhost_plugin_problems 1") {
			t.Errorf("/metrics does not report the refused plugin (skillhost_plugin_problems 1)")
		}
	})
	t.Run("no goroutine leak", func(t *testing.T) {
		const slack = 10
		var n int
		if !waitFor(10*time.Second, func() bool {
			httpClient.CloseIdleConnections()
			n = runtime.NumGoroutine()
			return n <= baseline+slack
		}) {
			buf := make([]byte, 1<<20)
			t.Errorf("goroutines: %d, baseline %d (+%d slack)\n%s", n, baseline, slack, buf[:runtime.Stack(buf, true)])
		}
	})
}
