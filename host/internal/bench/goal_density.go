package bench

import (
	"context"
	"fmt"
	"time"
)

// P9's sizes: distinct Go plugins, and plugin folders of the WAT echo.
const (
	denseCopies   = 100
	folderCopies  = 1000
	warmCalls     = 300 // per side per round of the warm-call comparison
	denseMaxStart = 5 * time.Second
	denseMaxRSS   = 4 << 20
	denseMaxFirst = 100 * time.Millisecond
)

// p9 is density: 100 distinct Go plugins on one host (warm start, idle
// memory, the first call to an idle plugin, a call to a warm one next to
// a host serving a single plugin) and 1,000 plugin folders that load and
// serve.
func (h *Harness) p9(ctx context.Context) []Row {
	fail := func(metric string, err error) []Row { return []Row{failed("P9", metric, err)} }
	plugins, err := h.goPlugins(denseCopies)
	if err != nil {
		return fail("density", err)
	}
	data, err := h.dir("p9-data")
	if err != nil {
		return fail("density", err)
	}
	cfg := idleConfig(p6Idle)
	// Cold: the first start compiles every plugin, in the background.
	p, coldListen, coldReady, err := h.timedStart(ctx, "p9-cold", cfg, plugins, data, denseCopies)
	if err != nil {
		return fail("density", err)
	}
	p.Stop(30 * time.Second)
	p, warmListen, warmReady, err := h.timedStart(ctx, "p9-warm", cfg, plugins, data, denseCopies)
	if err != nil {
		return fail("density", err)
	}
	defer p.Stop(30 * time.Second)
	h.logf("P9: cold start %v (ready %v), warm start %v (ready %v)", coldListen, coldReady, warmListen, warmReady)
	start := Row{ID: "P9", Metric: fmt.Sprintf("warm start, %d Go plugins", denseCopies),
		Baseline: fmt.Sprintf("limit %v", denseMaxStart), Subject: fmt.Sprintf("%.2f s", warmListen.Seconds()),
		Ratio: SpreadOf([]float64{warmListen.Seconds() / denseMaxStart.Seconds()})}
	atMost(&start, 1)
	start.Notes = append(start.Notes, fmt.Sprintf("from exec to the first HTTP answer of a host serving %d distinct Go plugins (copies of plugins/echo, each its own module) on the data folder of an earlier start: every plugin validated and on the card, nothing compiled (the load checks are on record); every plugin compiled by %.2f s. The first start on an empty folder answered after %.2f s and had compiled all %d, in the background, by %.2f s",
		denseCopies, warmReady.Seconds(), coldListen.Seconds(), denseCopies, coldReady.Seconds()))

	rows := []Row{start}
	rows = append(rows, h.p9Idle(ctx, p)...)
	first, err := firstCalls(ctx, p.Addr)
	if err != nil {
		return append(rows, failed("P9", "first call to an idle plugin", err))
	}
	rows = append(rows, first, h.p9Warm(ctx, p))
	return append(rows, h.p9Folders(ctx))
}

// p9Idle is the idle resident memory of the warm host, per plugin.
func (h *Harness) p9Idle(ctx context.Context, p *Proc) []Row {
	if err := waitIdle(ctx, p.Addr, 5*time.Minute); err != nil {
		return []Row{failed("P9", "idle RSS per plugin", err)}
	}
	rss, err := settledRSS(ctx, p)
	if err != nil {
		return []Row{failed("P9", "idle RSS per plugin", err)}
	}
	per := float64(rss) / denseCopies
	row := Row{ID: "P9", Metric: fmt.Sprintf("idle RSS per plugin (%d plugins)", denseCopies),
		Baseline: fmt.Sprintf("limit %d MiB per plugin", denseMaxRSS>>20),
		Subject:  fmt.Sprintf("%.2f MiB per plugin (%.0f MiB in all)", per/(1<<20), float64(rss)/(1<<20)),
		Ratio:    SpreadOf([]float64{per / denseMaxRSS})}
	atMost(&row, 1)
	row.Notes = append(row.Notes, fmt.Sprintf("resident set of the warm host once settled, nothing called (GET /admin/pool: no instance, no compiled code); the whole process counts: total / %d / %d MiB",
		denseCopies, denseMaxRSS>>20))
	return []Row{row}
}

// firstCalls times one skill/execute to each idle plugin (no instance, no
// code resident: the call loads the code from the compilation cache,
// instantiates and starts the Go runtime), one after another.
func firstCalls(ctx context.Context, addr string) (Row, error) {
	if err := waitIdle(ctx, addr, 5*time.Minute); err != nil {
		return Row{}, err
	}
	sid, err := newSession(addr)
	if err != nil {
		return Row{}, err
	}
	var took, sandbox []time.Duration
	for i := range denseCopies {
		var res struct {
			Accounting struct {
				DurationUS int64 `json:"duration_us"`
			} `json:"accounting"`
		}
		start := time.Now()
		if err := call(addr, "_cleveragents/skill/execute", map[string]any{
			"session_id": sid, "skill_id": fmt.Sprintf("echo-%d", i), "skill_params": map[string]any{"i": i},
		}, &res); err != nil {
			return Row{}, err
		}
		took = append(took, time.Since(start))
		sandbox = append(sandbox, time.Duration(res.Accounting.DurationUS)*time.Microsecond)
	}
	lat, in := LatencyOf(took), LatencyOf(sandbox)
	row := Row{ID: "P9", Metric: "first call to an idle plugin (p50)",
		Baseline: fmt.Sprintf("limit %v", denseMaxFirst), Subject: fmt.Sprintf("p50 %v (p90 %v, max %v)", lat.P50.Round(time.Millisecond), lat.P90.Round(time.Millisecond), lat.Max.Round(time.Millisecond)),
		Ratio: SpreadOf([]float64{float64(lat.P50) / float64(denseMaxFirst)})}
	atMost(&row, 1)
	row.Notes = append(row.Notes, fmt.Sprintf("one skill/execute (over HTTP, from request to response) to each of the %d idle plugins in turn: its compiled code is loaded from wazero's on-disk cache, an instance created and the Go runtime started; of which in the sandbox (the call's accounting.duration_us: code, instance, Go start, the call) p50 %v, p90 %v",
		denseCopies, in.P50.Round(time.Millisecond), in.P90.Round(time.Millisecond)))
	return row, nil
}

// p9Warm compares a call to a warm plugin of the dense host with the same
// call on a host serving that plugin alone, in alternating rounds.
func (h *Harness) p9Warm(ctx context.Context, dense *Proc) Row {
	metric := "call to a warm plugin (p50), vs a host with one plugin"
	one, err := h.dir("p9-one-plugin")
	if err == nil {
		err = h.copyPlugin("go-plugins-100", "echo-0", one)
	}
	if err != nil {
		return failed("P9", metric, err)
	}
	d1, err := h.dir("p9-one-data")
	if err != nil {
		return failed("P9", metric, err)
	}
	alone, _, _, err := h.timedStart(ctx, "p9-one", idleConfig(p6Idle), one, d1, 1)
	if err != nil {
		return failed("P9", metric, err)
	}
	defer alone.Stop(30 * time.Second)
	// The steady state: the first calls' instances and code released.
	if err := waitIdle(ctx, dense.Addr, 5*time.Minute); err != nil {
		return failed("P9", metric, err)
	}
	var ratios, denseP50, aloneP50 []float64
	for r := range max(h.Rounds, 5) { // short rounds: more of them, for the machine's noise
		if ctx.Err() != nil {
			return failed("P9", metric, ctx.Err())
		}
		sides := []*Proc{dense, alone}
		if r%2 == 1 {
			sides = []*Proc{alone, dense}
		}
		got := map[*Proc]time.Duration{}
		for _, p := range sides {
			lat, err := warmLatency(p.Addr)
			if err != nil {
				return failed("P9", metric, err)
			}
			got[p] = lat
		}
		ratios = append(ratios, float64(got[dense])/float64(got[alone]))
		denseP50, aloneP50 = append(denseP50, float64(got[dense].Microseconds())), append(aloneP50, float64(got[alone].Microseconds()))
	}
	row := Row{ID: "P9", Metric: metric, Baseline: fmt.Sprintf("one plugin, p50 %.0f µs", median(aloneP50)),
		Subject: fmt.Sprintf("%d plugins, p50 %.0f µs", denseCopies, median(denseP50)), Ratio: SpreadOf(ratios)}
	atMost(&row, 1.2)
	row.Notes = append(row.Notes, fmt.Sprintf("%d sequential skill/execute calls of echo-0 per side per round (after one to warm it), on the %d-plugin host and on a host serving echo-0 alone; \"unchanged\" within 20%% for the machine's noise", warmCalls, denseCopies))
	return row
}

// warmLatency warms echo-0 and returns the p50 of warmCalls calls.
func warmLatency(addr string) (time.Duration, error) {
	sid, err := newSession(addr)
	if err != nil {
		return 0, err
	}
	params := map[string]any{"session_id": sid, "skill_id": "echo-0", "skill_params": map[string]any{"warm": true}}
	if err := call(addr, "_cleveragents/skill/execute", params, nil); err != nil {
		return 0, err
	}
	took := make([]time.Duration, 0, warmCalls)
	for range warmCalls {
		start := time.Now()
		if err := call(addr, "_cleveragents/skill/execute", params, nil); err != nil {
			return 0, err
		}
		took = append(took, time.Since(start))
	}
	return LatencyOf(took).P50, nil
}

// p9Folders starts a host on 1,000 plugin folders (distinct WAT modules)
// and calls each plugin once: all must serve.
func (h *Harness) p9Folders(ctx context.Context) Row {
	metric := fmt.Sprintf("%d plugin folders load and serve", folderCopies)
	plugins, err := h.dir("p9-folders")
	if err == nil {
		err = WriteCopies(plugins, echoWasm, folderCopies)
	}
	if err != nil {
		return failed("P9", metric, err)
	}
	data, err := h.dir("p9-folders-data")
	if err != nil {
		return failed("P9", metric, err)
	}
	p, listen, ready, err := h.timedStart(ctx, "p9-folders", idleConfig(p6Idle), plugins, data, folderCopies)
	if err != nil {
		return failed("P9", metric, err)
	}
	defer p.Stop(30 * time.Second)
	sid, err := newSession(p.Addr)
	if err != nil {
		return failed("P9", metric, err)
	}
	served := 0
	start := time.Now()
	var firstErr error
	for i := range folderCopies {
		err := call(p.Addr, "_cleveragents/skill/execute", map[string]any{
			"session_id": sid, "skill_id": fmt.Sprintf("echo-%d", i), "skill_params": map[string]any{"i": i},
		}, nil)
		if err == nil {
			served++
		} else if firstErr == nil {
			firstErr = err
		}
	}
	calls := time.Since(start)
	rss, _ := settledRSS(ctx, p)
	row := Row{ID: "P9", Metric: metric, Baseline: fmt.Sprintf("%d plugins", folderCopies),
		Subject: fmt.Sprintf("%d served", served), Ratio: SpreadOf([]float64{float64(served) / folderCopies})}
	atLeast(&row, 1)
	row.Notes = append(row.Notes, fmt.Sprintf("%d folders of the WAT echo (each a distinct module): the host answered HTTP after %.2f s and had compiled all by %.2f s; one call to each took %v in all; resident set then %.0f MiB",
		folderCopies, listen.Seconds(), ready.Seconds(), calls.Round(time.Millisecond), float64(rss)/(1<<20)))
	if firstErr != nil {
		row.Notes = append(row.Notes, "first failure: "+firstErr.Error())
	}
	return row
}
