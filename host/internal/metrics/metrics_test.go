package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/metrics"
)

func TestMiddlewareCountsOutcomes(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20})
	eng.Register("ok", m.Middleware("ok", func(context.Context, *jsonrpc.Request) (any, error) { return "fine", nil }))
	eng.Register("slow", m.Middleware("slow", func(context.Context, *jsonrpc.Request) (any, error) {
		return nil, fault.New(fault.Timeout, fault.ReasonTimeout, "too slow")
	}))
	m.GaugeFunc("skillhost_test_gauge", "A test gauge.", func() float64 { return 42 })
	ctx := context.Background()
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ok"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ok"}`,
		`{"jsonrpc":"2.0","id":3,"method":"slow"}`,
	} {
		eng.Handle(ctx, []byte(body))
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`skillhost_rpc_calls_total{code="0",method="ok",reason=""} 2`,
		`skillhost_rpc_calls_total{code="-32104",method="slow",reason="timeout"} 1`,
		`skillhost_rpc_duration_seconds_count{method="ok"} 2`,
		`skillhost_test_gauge 42`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics output lacks %q", want)
		}
	}
}

// scrape returns the metrics text of m.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	return string(body)
}

// Skill series are resolved once and counted by reason; Retain drops the
// series of skills no longer loaded; SkillTotals reads them back.
func TestSkillMetrics(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	first, again := m.Skill("p", "a"), m.Skill("p", "a")
	if first != again {
		t.Error("Skill resolves the same series twice")
	}
	m.Skill("p", "a").Observe(2*time.Millisecond, "")
	m.Skill("p", "a").Observe(time.Second, "timeout")
	m.Skill("p", "a").Observe(time.Millisecond, "trap")
	m.Skill("q", "b").Observe(time.Millisecond, "trap")
	body := scrape(t, m)
	for _, want := range []string{
		`skillhost_skill_calls_total{plugin="p",skill="a"} 3`,
		`skillhost_skill_errors_total{plugin="p",reason="timeout",skill="a"} 1`,
		`skillhost_skill_errors_total{plugin="q",reason="trap",skill="b"} 1`,
		`skillhost_skill_duration_seconds_count{plugin="p",skill="a"} 3`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	totals := m.SkillTotals()
	if len(totals) != 2 || totals[0].Calls != 3 || totals[0].Errors["timeout"] != 1 || totals[0].Errors["trap"] != 1 ||
		totals[0].Seconds < 1 || totals[1].Skill != "b" {
		t.Errorf("SkillTotals = %+v", totals)
	}
	m.Retain(func(plugin, skill string) bool { return plugin == "p" })
	body = scrape(t, m)
	if strings.Contains(body, `plugin="q"`) || !strings.Contains(body, `plugin="p"`) {
		t.Errorf("Retain kept the wrong series:\n%s", body)
	}
	if totals := m.SkillTotals(); len(totals) != 1 {
		t.Errorf("SkillTotals after Retain = %+v", totals)
	}
}

type fakeSource struct{}

func (fakeSource) Pools() []metrics.Pool {
	return []metrics.Pool{{Plugin: "p", Version: "1.0.0", Idle: 2, Busy: 1, Discarded: 4, Saturated: 5, MemoryPeakBytes: 6, MemoryLimitBytes: 7}}
}

func (fakeSource) Host() metrics.Host {
	return metrics.Host{Plugins: 1, Problems: 2, Loading: 3, CallsRunning: 4, InstancesLive: 5, InstancesIdle: 6,
		BudgetBytes: 7, ReservedBytes: 8, CompileHits: 9, CompileMisses: 10}
}

// Scrape-time metrics read their source.
func TestWatch(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	m.Watch(fakeSource{})
	m.PluginEvent("p", "loaded")
	m.Rejected(fault.New(fault.Parse, fault.ReasonParse, "not JSON"))
	m.StoreOp("session_get").Since(time.Now())
	body := scrape(t, m)
	for _, want := range []string{
		`skillhost_plugin_info{plugin="p",version="1.0.0"} 1`,
		`skillhost_plugin_instances{plugin="p",state="idle"} 2`,
		`skillhost_plugin_instances{plugin="p",state="busy"} 1`,
		`skillhost_plugin_instances_discarded_total{plugin="p"} 4`,
		`skillhost_plugin_pool_saturated_total{plugin="p"} 5`,
		`skillhost_plugin_memory_peak_bytes{plugin="p"} 6`,
		`skillhost_plugin_memory_limit_bytes{plugin="p"} 7`,
		`skillhost_plugins_loaded 1`, `skillhost_plugin_problems 2`, `skillhost_plugins_loading 3`,
		`skillhost_sandbox_calls_running 4`, `skillhost_sandbox_instances_live 5`, `skillhost_sandbox_instances_idle 6`,
		`skillhost_sandbox_budget_bytes 7`, `skillhost_sandbox_reserved_bytes 8`,
		`skillhost_sandbox_compiles_total{result="hit"} 9`, `skillhost_sandbox_compiles_total{result="miss"} 10`,
		`skillhost_plugin_reloads_total{event="loaded",plugin="p"} 1`,
		`skillhost_store_duration_seconds_count{op="session_get"} 1`,
		`skillhost_rpc_rejected_total{reason="parse_error"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// A method's success series is resolved when the method is wrapped; the
// hot path does no label lookup and no allocation.
func TestMethodObserveAllocs(t *testing.T) {
	m := metrics.New()
	mm := m.Method("m")
	s := m.Skill("p", "a")
	if n := testing.AllocsPerRun(100, func() { mm.Observe(time.Millisecond, nil); s.Observe(time.Millisecond, "") }); n != 0 {
		t.Errorf("a successful call's metrics allocate %v times", n)
	}
}

// Delivery series exist for every kind from the start (0), count outcomes,
// drops and attempts, and read the pending gauge at scrape time.
func TestDeliveries(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	d := metrics.NewDeliveries(m.Registry(), "push", "webhook")
	body := scrape(t, m)
	for _, want := range []string{
		`skillhost_deliveries_total{kind="webhook",outcome="failed"} 0`,
		`skillhost_deliveries_dropped_total{kind="push"} 0`,
		`skillhost_delivery_attempts_total{kind="push",result="retry"} 0`,
		`skillhost_deliveries_pending{kind="webhook"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q before any delivery", want)
		}
	}
	d.Finished("push", "delivered")
	d.Finished("push", "dropped")
	d.Finished("push", "dropped")
	d.Attempted("webhook", "final")
	d.WatchPending(func() map[string]int { return map[string]int{"push": 3} })
	body = scrape(t, m)
	for _, want := range []string{
		`skillhost_deliveries_total{kind="push",outcome="delivered"} 1`,
		`skillhost_deliveries_dropped_total{kind="push"} 2`,
		`skillhost_delivery_attempts_total{kind="webhook",result="final"} 1`,
		`skillhost_deliveries_pending{kind="push"} 3`,
		`skillhost_deliveries_pending{kind="webhook"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// History lists each called skill's recent calls, errors and rate-limit
// refusals; a refusal is counted by rule on /metrics; Retain drops both.
func TestSkillHistory(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	echo := m.Skill("tools", "echo")
	echo.Observe(3*time.Millisecond, "")
	echo.Observe(5*time.Millisecond, fault.ReasonTimeout)
	echo.Observe(0, fault.ReasonRateLimited)
	echo.RateLimited("ech*", "key")
	m.Skill("tools", "idle") // resolved, never called
	h := m.History(time.Now())
	if h.Buckets != metrics.HistoryBuckets || h.BucketSeconds != 10 || len(h.Skills) != 2 {
		t.Fatalf("history = %d buckets of %d s, %d skills", h.Buckets, h.BucketSeconds, len(h.Skills))
	}
	sum := func(v []uint32) (n uint32) {
		for _, x := range v {
			n += x
		}
		return n
	}
	s := h.Skills[0]
	if s.Skill != "echo" || sum(s.Calls) != 3 || sum(s.Errors) != 2 || sum(s.Limited) != 1 {
		t.Errorf("echo's history: %s calls %d errors %d limited %d", s.Skill, sum(s.Calls), sum(s.Errors), sum(s.Limited))
	}
	if !strings.Contains(scrape(t, m), `skillhost_skill_rate_limited_total{per="key",plugin="tools",rule="ech*",skill="echo"} 1`) {
		t.Error("the refusal is not counted by rule")
	}
	m.Retain(func(string, string) bool { return false })
	if n := len(m.History(time.Now()).Skills); n != 0 || strings.Contains(scrape(t, m), "skillhost_skill_rate_limited_total{") {
		t.Errorf("after Retain: %d skills in the history, or the refusal series kept", n)
	}
}
