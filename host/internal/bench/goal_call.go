package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

var callInput = []byte(`{"text":"hello, benchmark","n":12345}`)

// timed runs f repeatedly for d (after a short warm-up) and returns its
// time and bytes allocated per call.
func timed(d time.Duration, f func() error) (ns, bytes float64, err error) {
	for end := time.Now().Add(d / 10); time.Now().Before(end); {
		if err := f(); err != nil {
			return 0, 0, err
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start, n := time.Now(), 0
	for time.Since(start) < d {
		for range 64 {
			if err := f(); err != nil {
				return 0, 0, err
			}
		}
		n += 64
	}
	el := time.Since(start)
	runtime.ReadMemStats(&after)
	return float64(el.Nanoseconds()) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n), nil
}

// inProcess is the host's call path built in this process: the sandbox
// runtime and plugin registry of `serve` (no store), with the echo plugin.
type inProcess struct {
	parts *assemble.Root
}

func (h *Harness) newInProcess(ctx context.Context) (*inProcess, error) {
	plugins, err := h.dir("inproc-plugins")
	if err == nil {
		err = WriteEchoPlugin(plugins)
	}
	if err != nil {
		return nil, err
	}
	cfg := config.Defaults()
	cfg.Policy.QueueWait = 5 * time.Second
	parts, err := assemble.Build(ctx, assemble.Spec{Config: cfg, Purpose: assemble.Validate})
	if err != nil {
		return nil, err
	}
	if err := parts.Registry.LoadDir(ctx, plugins); err != nil {
		_ = parts.Close(ctx)
		return nil, err
	}
	return &inProcess{parts: parts}, nil
}

func (p *inProcess) execute(ctx context.Context, skill string, timeout time.Duration) (*plugin.Outcome, error) {
	return p.parts.Registry.Execute(ctx, plugin.Call{SkillID: skill, Input: callInput, Timeout: timeout})
}

// p2 compares the host's in-process call path with a raw go-sdk call on a
// reused instance.
func (h *Harness) p2(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P2", "in-process call path", err)} }
	ip, err := h.newInProcess(ctx)
	if err != nil {
		return fail(err)
	}
	defer ip.parts.Close(context.WithoutCancel(ctx))
	compiled, err := extism.NewCompiledPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: echoWasm}}},
		extism.PluginConfig{EnableWasi: true, RuntimeConfig: wazero.NewRuntimeConfig().WithCloseOnContextDone(true)}, nil)
	if err != nil {
		return fail(err)
	}
	defer compiled.Close(context.WithoutCancel(ctx))
	raw, err := compiled.Instance(ctx, extism.PluginInstanceConfig{})
	if err != nil {
		return fail(err)
	}
	defer raw.Close(context.WithoutCancel(ctx))
	rawCall := func() error {
		_, out, err := raw.CallWithContext(ctx, "echo", callInput)
		if err == nil && len(out) != len(callInput) {
			err = fmt.Errorf("raw echo returned %q", out)
		}
		return err
	}
	hostCall := func() error {
		out, err := ip.execute(ctx, "echo", 0)
		if err == nil && len(out.Output) != len(callInput) {
			err = fmt.Errorf("echo returned %q", out.Output)
		}
		return err
	}
	d := max(h.Duration/4, 200*time.Millisecond)
	var rawNs, hostNs, rawB, hostB, ratio []float64
	for r := range h.Rounds {
		first, second := rawCall, hostCall
		if r%2 == 1 {
			first, second = hostCall, rawCall
		}
		a, ab, err := timed(d, first)
		if err != nil {
			return fail(err)
		}
		b, bb, err := timed(d, second)
		if err != nil {
			return fail(err)
		}
		if r%2 == 1 {
			a, b, ab, bb = b, a, bb, ab
		}
		rawNs, hostNs, rawB, hostB = append(rawNs, a), append(hostNs, b), append(rawB, ab), append(hostB, bb)
		ratio = append(ratio, b/a)
	}
	fresh, _, err := timed(d, func() error { // what a call costs without a pool
		p, err := compiled.Instance(ctx, extism.PluginInstanceConfig{})
		if err != nil {
			return err
		}
		defer p.Close(ctx)
		_, _, err = p.CallWithContext(ctx, "echo", callInput)
		return err
	})
	if err != nil {
		return fail(err)
	}
	row := Row{ID: "P2", Metric: "in-process call path",
		Baseline: fmt.Sprintf("raw go-sdk call, reused instance %.1f µs", median(rawNs)/1e3),
		Subject:  fmt.Sprintf("Registry.Execute %.1f µs", median(hostNs)/1e3), Ratio: SpreadOf(ratio)}
	atMost(&row, 1.2)
	row.Notes = append(row.Notes, fmt.Sprintf("one echo call of the WAT plugin at a time; Registry.Execute is what skill/execute, agent/call, A2A tasks and plan steps run: skill lookup, input check, pool, memory budget, deadline, sandbox call, classification. Allocated per call: raw %.0f B, host %.0f B. A fresh instance per call (instantiate, call, close) takes %.0f µs: the pool makes a call %.0f× faster", median(rawB), median(hostB), fresh/1e3, fresh/median(hostNs)))
	return []Row{row}
}

// p7 measures how long after its timeout a spinning call returns.
func (h *Harness) p7(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P7", "spinning plugin stopped", err)} }
	ip, err := h.newInProcess(ctx)
	if err != nil {
		return fail(err)
	}
	defer ip.parts.Close(context.WithoutCancel(ctx))
	const timeout, slack = 100 * time.Millisecond, 20 * time.Millisecond
	calls := max(10, int(100*h.Samples))
	var (
		mu   sync.Mutex
		over []time.Duration
		wg   sync.WaitGroup
		errs []error
	)
	for w := range 1 { // one at a time: the deadline alone, not a contest for the cores
		wg.Go(func() {
			for range calls {
				start := time.Now()
				_, err := ip.execute(ctx, "spin", timeout)
				took := time.Since(start)
				var fe *fault.Error
				mu.Lock()
				if !errors.As(err, &fe) || fe.Reason != fault.ReasonTimeout {
					errs = append(errs, fmt.Errorf("spin call %d: %v, want a timeout", w, err))
				}
				over = append(over, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fail(errs[0])
	}
	lat := LatencyOf(over)
	row := Row{ID: "P7", Metric: "spinning plugin stopped (p99)",
		Baseline: fmt.Sprintf("timeout %v + %v", timeout, slack),
		Subject:  fmt.Sprintf("p99 %v (p50 %v, max %v)", lat.P99.Round(100*time.Microsecond), lat.P50.Round(100*time.Microsecond), lat.Max.Round(100*time.Microsecond)),
		Ratio:    SpreadOf([]float64{float64(lat.P99) / float64(timeout+slack)})}
	atMost(&row, 1)
	row.Notes = append(row.Notes, fmt.Sprintf("%d calls of an export that loops forever, one at a time, each with a %v timeout, through Registry.Execute; every one ended as -32104 timeout; the ratio is p99 / (timeout + %v)", len(over), timeout, slack))
	return []Row{row}
}
