package bench

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/assemble"
)

// BenchmarkSkillExecuteHTTP is P1's subject in this process: skill/execute
// of the WAT echo plugin (one session) over HTTP on 127.0.0.1, through the
// whole host `serve` builds (httpx middleware, JSON-RPC engine, auth, the
// rpc service, the registry, the sandbox), driven by 32 fasthttp clients.
// allocs/op and B/op count both sides (the client allocates next to
// nothing); profile it with -cpuprofile/-memprofile.
//
//	go test -run '^$' -bench SkillExecuteHTTP -benchmem ./host/internal/bench/
func BenchmarkSkillExecuteHTTP(b *testing.B) {
	ctx := b.Context()
	plugins, data := b.TempDir(), b.TempDir()
	if err := WriteEchoPlugin(plugins); err != nil {
		b.Fatal(err)
	}
	cfg := config.Defaults() // as hostConfig: no hot reload, a long queue wait
	cfg.Listen, cfg.Data, cfg.Plugins = "127.0.0.1:0", data, plugins
	cfg.HotReload = false
	cfg.Policy.QueueWait = 5 * time.Second
	log := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	root, err := assemble.Build(ctx, assemble.Spec{Config: cfg, Purpose: assemble.Serve, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- root.Serve(sctx) }()
	b.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			b.Errorf("Serve: %v", err)
		}
	})
	addr := root.Addr().String()
	if err := waitReady(ctx, addr, 1, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	sid, err := newSession(addr)
	if err != nil {
		b.Fatal(err)
	}
	body := execBody(sid)
	client := &fasthttp.HostClient{Addr: addr, MaxConns: 32, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	do := func(req *fasthttp.Request, resp *fasthttp.Response) error {
		if err := client.Do(req, resp); err != nil {
			return err
		}
		_, err := checkExec(resp.StatusCode(), resp.Body())
		return err
	}
	// One call first: the instance pool is warm before counting.
	warm := func() error {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		prepare(req, addr, body)
		return do(req, resp)
	}
	if err := warm(); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(16) // 32 clients on 2 cores, as P1
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		prepare(req, addr, body)
		for pb.Next() {
			if err := do(req, resp); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	// CPU per call (the process's: host and client) and collections: on
	// a shared machine, steadier than ns/op.
	cpu := processCPU(b) - cpu0
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(ms1.NumGC-ms0.NumGC)*1000/float64(b.N), "gc/kop")
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// prepare makes req the skill/execute POST of body to addr.
func prepare(req *fasthttp.Request, addr string, body []byte) {
	req.SetRequestURI("http://" + addr + "/rpc")
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetContentType("application/json")
	req.SetBodyRaw(body)
}
