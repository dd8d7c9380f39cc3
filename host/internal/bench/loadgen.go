package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// maxSamples caps the latencies one run keeps (the rest are counted, not
// kept), so a long run on a fast server cannot grow without bound.
const maxSamples = 2_000_000

// Load is one closed-loop HTTP load: Concurrency workers each POST a body,
// wait for the response, check it and send the next one, for Warmup (not
// counted) and then Duration. It only talks to loopback addresses.
type Load struct {
	// Addr is the server's "127.0.0.1:port" (any loopback IP).
	Addr string
	// Path is the request path. Default: "/rpc".
	Path string
	// Concurrency is the number of workers (and connections). Default: 32.
	Concurrency int
	// Warmup runs before counting starts. Default: none.
	Warmup time.Duration
	// Duration is how long requests are counted. Required.
	Duration time.Duration
	// Body returns the JSON body of a worker's n-th request.
	Body func(worker, n int) []byte
	// Check validates a response; ack, when not empty, is kept in
	// Result.Acks (e.g. the id of a task the server acknowledged).
	Check func(status int, body []byte) (ack string, err error)
	// Timeout bounds one request. Default: 10s.
	Timeout time.Duration
}

// Result is what a Load measured over its counted period.
type Result struct {
	Requests int           // responses that passed Check
	Errors   int           // failed requests and failed checks
	FirstErr error         // the first of them, for the report
	Elapsed  time.Duration // the counted period's length
	Latency  Latency       // of the counted successful requests
	Acks     []string      // what Check acknowledged, in no particular order
}

// RPS is the counted successful requests per second.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Run applies the load and returns what it measured. It returns an error
// only for a misconfigured load; request failures are counted in Result.
func Run(ctx context.Context, l Load) (Result, error) {
	if err := l.defaults(); err != nil {
		return Result{}, err
	}
	client := &fasthttp.HostClient{
		Addr: l.Addr, MaxConns: l.Concurrency, ReadTimeout: l.Timeout, WriteTimeout: l.Timeout,
		MaxIdemponentCallAttempts: 1, NoDefaultUserAgentHeader: true,
	}
	defer client.CloseIdleConnections()

	start := time.Now()
	countFrom, stopAt := start.Add(l.Warmup), start.Add(l.Warmup+l.Duration)
	workers := make([]worker, l.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			workers[i].run(ctx, client, &l, i, countFrom, stopAt)
		}()
	}
	wg.Wait()
	res := Result{Elapsed: stopAt.Sub(countFrom)}
	if now := time.Now(); now.Before(stopAt) { // ended early (ctx)
		res.Elapsed = max(0, now.Sub(countFrom))
	}
	var all []time.Duration
	for i := range workers {
		w := &workers[i]
		res.Requests += w.ok
		res.Errors += w.errs
		if res.FirstErr == nil {
			res.FirstErr = w.firstErr
		}
		res.Acks = append(res.Acks, w.acks...)
		all = append(all, w.lat...)
	}
	res.Latency = LatencyOf(all)
	return res, nil
}

func (l *Load) defaults() error {
	if l.Path == "" {
		l.Path = "/rpc"
	}
	if l.Concurrency <= 0 {
		l.Concurrency = 32
	}
	if l.Timeout <= 0 {
		l.Timeout = 10 * time.Second
	}
	if l.Duration <= 0 || l.Body == nil || l.Check == nil {
		return errors.New("bench: a load needs Duration, Body and Check")
	}
	host, _, err := net.SplitHostPort(l.Addr)
	if err != nil {
		return fmt.Errorf("bench: address %q: %w", l.Addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("bench: address %q is not a loopback IP: the load generator only talks to this machine", l.Addr)
	}
	return nil
}

// worker is one closed loop's counters.
type worker struct {
	ok, errs int
	firstErr error
	lat      []time.Duration
	acks     []string
}

func (w *worker) run(ctx context.Context, c *fasthttp.HostClient, l *Load, id int, countFrom, stopAt time.Time) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI("http://" + l.Addr + l.Path)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	for n := 0; ctx.Err() == nil; n++ {
		t0 := time.Now()
		if !t0.Before(stopAt) {
			return
		}
		req.SetBodyRaw(l.Body(id, n))
		err := c.DoTimeout(req, resp, l.Timeout)
		var ack string
		if err == nil {
			ack, err = l.Check(resp.StatusCode(), resp.Body())
		}
		d := time.Since(t0)
		if t0.Before(countFrom) || t0.Add(d).After(stopAt) {
			continue // warm-up, or straddling the end of the counted period
		}
		if err != nil {
			w.errs++
			if w.firstErr == nil {
				w.firstErr = err
			}
			continue
		}
		w.ok++
		if ack != "" {
			w.acks = append(w.acks, ack)
		}
		if len(w.lat) < maxSamples/max(1, l.Concurrency) {
			w.lat = append(w.lat, d)
		}
	}
}

// Latency summarises a set of request latencies.
type Latency struct {
	P50, P90, P99, Max time.Duration
}

// LatencyOf computes the percentiles of samples (sorting them in place).
func LatencyOf(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	return Latency{
		P50: Percentile(samples, 50), P90: Percentile(samples, 90),
		P99: Percentile(samples, 99), Max: samples[len(samples)-1],
	}
}

// Percentile is the p-th percentile (nearest rank) of sorted samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
