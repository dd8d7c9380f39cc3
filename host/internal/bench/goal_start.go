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

// goPlugins writes the copies of the Go plugin once.
func (h *Harness) goPlugins() (string, error) {
	if h.GoPlugin == "" {
		return "", errNoGoPlugin
	}
	wasm, err := os.ReadFile(h.GoPlugin)
	if err != nil {
		return "", fmt.Errorf("%w (%v)", errNoGoPlugin, err)
	}
	dir, err := h.dir("go-plugins")
	if err != nil {
		return "", err
	}
	return dir, WriteCopies(dir, wasm, copies)
}

// timedStart starts skillhost and returns how long it took to answer HTTP.
func (h *Harness) timedStart(ctx context.Context, name, plugins, data string) (*Proc, time.Duration, error) {
	start := time.Now()
	p, err := h.startHost(ctx, name, plugins, data)
	return p, time.Since(start), err
}

// p4 compares a start with a warm compilation cache with a cold one, 20
// distinct Go plugins each.
func (h *Harness) p4(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P4", "start, warm cache vs cold", err)} }
	plugins, err := h.goPlugins()
	if err != nil {
		return fail(err)
	}
	var cold, warm, ratio []float64
	for r := range 2 {
		data, err := h.dir(fmt.Sprintf("p4-data-%d", r)) // empty: no compilation cache
		if err != nil {
			return fail(err)
		}
		p, c, err := h.timedStart(ctx, "p4-cold", plugins, data)
		if err != nil {
			return fail(err)
		}
		if err := callEach(p.Addr); err != nil {
			p.Stop(10 * time.Second)
			return fail(err)
		}
		p.Stop(30 * time.Second)
		p, w, err := h.timedStart(ctx, "p4-warm", plugins, data)
		if err != nil {
			return fail(err)
		}
		p.Stop(30 * time.Second)
		cold, warm, ratio = append(cold, c.Seconds()), append(warm, w.Seconds()), append(ratio, w.Seconds()/c.Seconds())
	}
	row := Row{ID: "P4", Metric: fmt.Sprintf("start with %d plugins, warm cache vs cold", copies),
		Baseline: fmt.Sprintf("cold start %.2f s", median(cold)), Subject: fmt.Sprintf("warm start %.2f s", median(warm)),
		Ratio: SpreadOf(ratio)}
	atMost(&row, 0.1)
	row.Notes = append(row.Notes, fmt.Sprintf("from exec to the first answer on HTTP (plugins load before the listener opens), %d distinct modules (the Go echo plugin with a custom section naming each copy); cold: empty data folder; warm: the same folder again, wazero's compilation cache filled", copies))
	return []Row{row}
}

// callEach calls every copy's skill once.
func callEach(addr string) error {
	sid, err := newSession(addr)
	if err != nil {
		return err
	}
	for i := range copies {
		var out map[string]any
		if err := call(addr, "_cleveragents/skill/execute", map[string]any{
			"session_id": sid, "skill_id": fmt.Sprintf("echo-%d", i), "skill_params": map[string]any{"i": i},
		}, &out); err != nil {
			return err
		}
	}
	return nil
}

// settledRSS waits for p's resident set to stop moving (or 5 s) and
// returns it.
func settledRSS(ctx context.Context, p *Proc) (uint64, error) {
	last, err := p.RSS()
	for end := time.Now().Add(5 * time.Second); err == nil && time.Now().Before(end); {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		var cur uint64
		if cur, err = p.RSS(); err == nil {
			if diff := int64(cur) - int64(last); diff < int64(last/100) && diff > -int64(last/100) {
				return cur, nil
			}
			last = cur
		}
	}
	return last, err
}

// p6 measures the resident memory of an idle host serving 20 Go plugins,
// each called once (its warm instance initialised), per plugin.
func (h *Harness) p6(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P6", "idle RSS per plugin", err)} }
	plugins, err := h.goPlugins()
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
	measure := func(name, plugins, data string, call bool) (uint64, error) {
		p, err := h.startHost(ctx, name, plugins, data)
		if err != nil {
			return 0, err
		}
		defer p.Stop(30 * time.Second)
		if call {
			if err := callEach(p.Addr); err != nil {
				return 0, err
			}
		}
		return settledRSS(ctx, p)
	}
	base, err := measure("p6-skillhost-empty", empty, d0, false)
	if err != nil {
		return fail(err)
	}
	full, err := measure("p6-skillhost", plugins, d1, true)
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
	tiny, err := measure("p6-skillhost-wat", small, d2, true)
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
	row.Notes = append(row.Notes, fmt.Sprintf("resident set of `skillhost serve` once settled, after one call to each of %d distinct Go plugins (one warm instance each, its Go runtime initialised); the whole process counts, so the ratio is total / %d / 8 MiB. A host with no plugin holds %.0f MiB: %.1f MiB per plugin on top of it. The same host with %d small plugins (the WAT echo, 388 bytes of wasm) holds %.0f MiB, %.1f MiB per plugin: a Go plugin's cost is its own (wazero's machine code for a 3 MiB Go module is ~12 MiB, and its Go runtime's heap lives in its linear memory)",
		copies, copies, float64(base)/mib, (float64(full)-float64(base))/copies/mib, copies, float64(tiny)/mib, float64(tiny)/copies/mib))
	return []Row{row}
}
