package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/metrics"
)

func TestMiddlewareCountsOutcomes(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	eng := jsonrpc.NewEngine()
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
