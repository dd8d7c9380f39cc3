package bench

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// execBody is the skill/execute request of P1 and P5 (the Fiber echo
// answers the same bytes).
func execBody(session string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":1,"method":"_cleveragents/skill/execute",`+
		`"params":{"session_id":%q,"skill_id":"echo","skill_params":{"text":"hello, benchmark","n":12345}}}`, session)
}

// checkExec accepts a successful skill/execute response carrying the echo.
func checkExec(status int, body []byte) (string, error) {
	if status != 200 || !bytes.Contains(body, []byte(`"status":"success"`)) || !bytes.Contains(body, []byte(`hello, benchmark`)) {
		return "", fmt.Errorf("unexpected response (HTTP %d): %.300s", status, body)
	}
	return "", nil
}

// load runs one counted load against addr.
func (h *Harness) load(ctx context.Context, addr string, body []byte, check func(int, []byte) (string, error)) (Result, error) {
	res, err := Run(ctx, Load{
		Addr: addr, Concurrency: h.Concurrency, Warmup: h.Warmup, Duration: h.Duration,
		Body: func(int, int) []byte { return body }, Check: check,
	})
	if err == nil && res.Errors > 0 {
		err = fmt.Errorf("%d of %d requests failed, first: %w", res.Errors, res.Errors+res.Requests, res.FirstErr)
	}
	if err == nil && res.Requests == 0 {
		err = fmt.Errorf("no request completed")
	}
	return res, err
}

// abRounds measures a and b alternately (a first in even rounds, b first in
// odd ones) and returns their results per round.
func (h *Harness) abRounds(ctx context.Context, a, b func() (Result, error)) (as, bs []Result, err error) {
	for r := range h.Rounds {
		first, second := a, b
		if r%2 == 1 {
			first, second = b, a
		}
		x, err := first()
		if err != nil {
			return nil, nil, err
		}
		y, err := second()
		if err != nil {
			return nil, nil, err
		}
		if r%2 == 1 {
			x, y = y, x
		}
		as, bs = append(as, x), append(bs, y)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
	}
	return as, bs, nil
}

// p1 compares skill/execute over HTTP with the native Fiber echo.
func (h *Harness) p1(ctx context.Context) []Row {
	fail := func(err error) []Row {
		return []Row{failed("P1", "throughput", err), failed("P1", "p99 latency", err)}
	}
	plugins, err := h.dir("p1-plugins")
	if err == nil {
		err = WriteEchoPlugin(plugins)
	}
	data, derr := h.dir("p1-data")
	if err = firstErr(err, derr); err != nil {
		return fail(err)
	}
	sh, err := h.startHost(ctx, "p1-skillhost", plugins, data)
	if err != nil {
		return fail(err)
	}
	defer sh.Stop(10 * time.Second)
	fe, err := h.startBaseline(ctx, "fiberecho")
	if err != nil {
		return fail(err)
	}
	defer fe.Stop(5 * time.Second)
	sid, err := newSession(sh.Addr)
	if err != nil {
		return fail(err)
	}
	body := execBody(sid)
	base, subj, err := h.abRounds(ctx,
		func() (Result, error) { return h.load(ctx, fe.Addr, body, checkExec) },
		func() (Result, error) { return h.load(ctx, sh.Addr, body, checkExec) })
	if err != nil {
		return fail(err)
	}
	tput := Row{ID: "P1", Metric: "throughput",
		Baseline: fmt.Sprintf("native Fiber echo %s", rpsOf(base)), Subject: rpsOf(subj),
		Ratio: SpreadOf(ratios(subj, base, func(r Result) float64 { return r.RPS() }))}
	atLeast(&tput, 0.6) // issue #22 raised it from 0.5
	lat := Row{ID: "P1", Metric: "p99 latency",
		Baseline: fmt.Sprintf("native Fiber echo %s", p99Of(base)), Subject: p99Of(subj),
		Ratio: SpreadOf(ratios(subj, base, func(r Result) float64 { return float64(r.Latency.P99) }))}
	atMost(&lat, 2)
	note := fmt.Sprintf("skill/execute of a WAT echo plugin (one session), %d clients over loopback, %v counted per side per round after %v warm-up", h.Concurrency, h.Duration, h.Warmup)
	tput.Notes = append(tput.Notes, note, fmt.Sprintf("p50: baseline %s, skillhost %s", p50Of(base), p50Of(subj)))
	h.explain(ctx, &tput, sh, body, checkExec)
	return []Row{tput, lat}
}

// p5 compares skillhost's throughput with GOMAXPROCS=2 and GOMAXPROCS=1.
func (h *Harness) p5(ctx context.Context) []Row {
	fail := func(err error) []Row { return []Row{failed("P5", "2 cores vs 1", err)} }
	plugins, err := h.dir("p5-plugins")
	if err == nil {
		err = WriteEchoPlugin(plugins)
	}
	d1, err1 := h.dir("p5-data-1")
	d2, err2 := h.dir("p5-data-2")
	if err = firstErr(err, err1, err2); err != nil {
		return fail(err)
	}
	one, err := h.startHost(ctx, "p5-skillhost-1core", plugins, d1, "GOMAXPROCS=1")
	if err != nil {
		return fail(err)
	}
	defer one.Stop(10 * time.Second)
	two, err := h.startHost(ctx, "p5-skillhost-2cores", plugins, d2, "GOMAXPROCS=2")
	if err != nil {
		return fail(err)
	}
	defer two.Stop(10 * time.Second)
	s1, err := newSession(one.Addr)
	if err != nil {
		return fail(err)
	}
	s2, err := newSession(two.Addr)
	if err != nil {
		return fail(err)
	}
	pinned, restore := pinApart(one, two)
	base, subj, err := h.abRounds(ctx,
		func() (Result, error) { return h.load(ctx, one.Addr, execBody(s1), checkExec) },
		func() (Result, error) { return h.load(ctx, two.Addr, execBody(s2), checkExec) })
	restore()
	if err != nil {
		return fail(err)
	}
	row := Row{ID: "P5", Metric: "throughput, 2 cores vs 1",
		Baseline: "GOMAXPROCS=1 " + rpsOf(base), Subject: "GOMAXPROCS=2 " + rpsOf(subj),
		Ratio: SpreadOf(ratios(subj, base, func(r Result) float64 { return r.RPS() }))}
	atLeast(&row, 1.7)
	row.Notes = append(row.Notes, pinned)
	return []Row{row}
}

// ratios divides subject by baseline round by round.
func ratios(subj, base []Result, f func(Result) float64) []float64 {
	out := make([]float64, 0, len(subj))
	for i := range subj {
		if d := f(base[i]); d > 0 {
			out = append(out, f(subj[i])/d)
		}
	}
	return out
}

func rpsOf(rs []Result) string {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = r.RPS()
	}
	return fmt.Sprintf("%.0f req/s", median(v))
}

func p99Of(rs []Result) string { return latOf(rs, func(l Latency) time.Duration { return l.P99 }) }
func p50Of(rs []Result) string { return latOf(rs, func(l Latency) time.Duration { return l.P50 }) }

func latOf(rs []Result, f func(Latency) time.Duration) string {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = float64(f(r.Latency))
	}
	return time.Duration(median(v)).Round(10 * time.Microsecond).String()
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
