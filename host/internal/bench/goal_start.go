package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// copies is the number of plugins of P4 and P6.
const copies = 20

// errNoGoPlugin is the reason P4 and P6 are not measured without a plugin.
var errNoGoPlugin = errors.New("no Go plugin to copy: run make plugins (or pass -go-plugin)")

// goPlugins writes n copies of the Go plugin.
func (h *Harness) goPlugins(n int) (string, error) {
	if h.GoPlugin == "" {
		return "", errNoGoPlugin
	}
	wasm, err := os.ReadFile(h.GoPlugin)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", errNoGoPlugin, err)
	}
	dir, err := h.dir(fmt.Sprintf("go-plugins-%d", n))
	if err != nil {
		return "", err
	}
	return dir, WriteCopies(dir, wasm, n)
}

// timedStart starts skillhost and returns how long it took to answer HTTP
// and to have every one of n plugins compiled (loaded, none compiling: a
// host serves before its plugins' first compiles end).
func (h *Harness) timedStart(ctx context.Context, name, config, plugins, data string, n int) (p *Proc, listen, ready time.Duration, err error) {
	start := time.Now()
	if p, err = h.startHostWith(ctx, name, config, plugins, data); err != nil {
		return nil, 0, 0, err
	}
	listen = time.Since(start)
	if err = waitReady(ctx, p.Addr, n, 10*time.Minute); err != nil {
		p.Stop(10 * time.Second)
		return nil, 0, 0, err
	}
	return p, listen, time.Since(start), nil
}

// p4 compares a start with a warm compilation cache with a cold one, 20
// distinct Go plugins each: the time until every plugin is compiled (the
// host answers HTTP before, while they compile in the background).
func (h *Harness) p4(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P4", "start, warm cache vs cold", err)} }
	plugins, err := h.goPlugins(copies)
	if err != nil {
		return fail(err)
	}
	var cold, warm, ratio, coldListen, warmListen []float64
	for r := range 2 {
		data, err := h.dir(fmt.Sprintf("p4-data-%d", r)) // empty: no compilation cache
		if err != nil {
			return fail(err)
		}
		p, cl, c, err := h.timedStart(ctx, "p4-cold", hostConfig, plugins, data, copies)
		if err != nil {
			return fail(err)
		}
		if err := callEach(p.Addr, copies); err != nil {
			p.Stop(10 * time.Second)
			return fail(err)
		}
		p.Stop(30 * time.Second)
		p, wl, w, err := h.timedStart(ctx, "p4-warm", hostConfig, plugins, data, copies)
		if err != nil {
			return fail(err)
		}
		p.Stop(30 * time.Second)
		cold, warm, ratio = append(cold, c.Seconds()), append(warm, w.Seconds()), append(ratio, w.Seconds()/c.Seconds())
		coldListen, warmListen = append(coldListen, cl.Seconds()), append(warmListen, wl.Seconds())
	}
	row := Row{ID: "P4", Metric: fmt.Sprintf("start with %d plugins, warm cache vs cold", copies),
		Baseline: fmt.Sprintf("cold start %.2f s", median(cold)), Subject: fmt.Sprintf("warm start %.2f s", median(warm)),
		Ratio: SpreadOf(ratio)}
	atMost(&row, 0.1)
	row.Notes = append(row.Notes, fmt.Sprintf("from exec until every plugin is compiled (GET /admin/plugins: all loaded), %d distinct modules (the Go echo plugin with a custom section naming each copy); cold: empty data folder; warm: the same folder again, wazero's compilation cache filled and every plugin's load check on record, so nothing compiles. The host answers HTTP before its plugins compile: after %.2f s cold, %.2f s warm",
		copies, median(coldListen), median(warmListen)))
	return []Row{row}
}

// callEach calls the skill of copies 0 … n-1 once.
func callEach(addr string, n int) error {
	sid, err := newSession(addr)
	if err != nil {
		return err
	}
	for i := range n {
		var out map[string]any
		if err := call(addr, "_cleveragents/skill/execute", map[string]any{
			"session_id": sid, "skill_id": fmt.Sprintf("echo-%d", i), "skill_params": map[string]any{"i": i},
		}, &out); err != nil {
			return err
		}
	}
	return nil
}

// settledRSS waits for p's resident set to stop moving: every reading of
// the last 2 s (one each 250 ms) within 1% of the newest (or 20 s pass),
// and returns it. The window outlasts the host's own clean-up after an
// idle spell (it returns freed memory once calls have been quiet for 1 s).
func settledRSS(ctx context.Context, p *Proc) (uint64, error) {
	const window = 8
	var readings []uint64
	for end := time.Now().Add(20 * time.Second); ; {
		cur, err := p.RSS()
		if err != nil {
			return 0, err
		}
		readings = append(readings, cur)
		if n := len(readings); n > window {
			readings = readings[n-window-1:]
			stable := true
			for _, r := range readings {
				if diff := int64(r) - int64(cur); diff > int64(cur/100) || diff < -int64(cur/100) {
					stable = false
				}
			}
			if stable || time.Now().After(end) {
				return cur, nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// p6Idle is policy.idle_timeout in P6 and P9.
const p6Idle = 5 * time.Second

// p6 measures the resident memory of an idle host serving 20 Go plugins,
// each called once and then left idle (policy.idle_timeout passed: no
// instance and no compiled code left), per plugin.
func (h *Harness) p6(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P6", "idle RSS per plugin", err)} }
	plugins, err := h.goPlugins(copies)
	if err != nil {
		return fail(err)
	}
	empty, err := h.dir("p6-empty-plugins")
	if err != nil {
		return fail(err)
	}
	d0, err0 := h.dir("p6-data-empty")
	d1, err1 := h.dir("p6-data")
	if err := firstErr(err0, err1); err != nil {
		return fail(err)
	}
	cfg := idleConfig(p6Idle)
	// measure returns the settled RSS right after one call to each plugin
	// (busy: instances and code resident) and once they are idle.
	measure := func(name, plugins, data string, n int) (busy, idle uint64, err error) {
		p, _, _, err := h.timedStart(ctx, name, cfg, plugins, data, n)
		if err != nil {
			return 0, 0, err
		}
		defer p.Stop(30 * time.Second)
		if n > 0 {
			if err := callEach(p.Addr, n); err != nil {
				return 0, 0, err
			}
			if busy, err = settledRSS(ctx, p); err != nil {
				return 0, 0, err
			}
		}
		if err := waitIdle(ctx, p.Addr, 5*time.Minute); err != nil {
			return 0, 0, err
		}
		idle, err = settledRSS(ctx, p)
		return busy, idle, err
	}
	_, base, err := measure("p6-skillhost-empty", empty, d0, 0)
	if err != nil {
		return fail(err)
	}
	busy, full, err := measure("p6-skillhost", plugins, d1, copies)
	if err != nil {
		return fail(err)
	}
	small, err := h.dir("p6-wat-plugins")
	if err == nil {
		err = WriteCopies(small, echoWasm, copies)
	}
	d2, err2 := h.dir("p6-data-wat")
	if err = firstErr(err, err2); err != nil {
		return fail(err)
	}
	_, tiny, err := measure("p6-skillhost-wat", small, d2, copies)
	if err != nil {
		return fail(err)
	}
	const mib = 1 << 20
	per := float64(full) / copies / mib
	row := Row{ID: "P6", Metric: fmt.Sprintf("idle RSS per plugin (%d plugins)", copies),
		Baseline: "limit 8 MiB per plugin",
		Subject:  fmt.Sprintf("%.1f MiB per plugin (%.0f MiB in all)", per, float64(full)/mib),
		Ratio:    SpreadOf([]float64{per / 8})}
	atMost(&row, 1)
	row.Notes = append(row.Notes, fmt.Sprintf("resident set of `skillhost serve` once settled, after one call to each of %d distinct Go plugins and then %v without calls (policy.idle_timeout, shortened from its default 60s so the run need not wait: what counts is the state after it, GET /admin/pool showing no instance and no compiled code left); the whole process counts, so the ratio is total / %d / 8 MiB. Right after the calls (an instance, its Go runtime initialised, and the compiled code of each plugin, within sandbox.max_code_bytes) it held %.0f MiB, %.1f MiB per plugin. A host with no plugin holds %.0f MiB: %.1f MiB per idle plugin on top of it. The same host with %d small plugins (the WAT echo, 388 bytes of wasm) holds %.0f MiB idle, %.1f MiB per plugin",
		copies, p6Idle, copies, float64(busy)/mib, float64(busy)/copies/mib, float64(base)/mib, (float64(full)-float64(base))/copies/mib,
		copies, float64(tiny)/mib, float64(tiny)/copies/mib))
	return []Row{row}
}
