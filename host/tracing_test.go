package host_test

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/skillhost/skillhost/host/config"
)

// otlpSpan is one span a collector received: its name, its trace and
// parent, and its string attributes.
type otlpSpan struct {
	name, trace, id, parent string
	attrs                   map[string]string
	failed                  bool
}

// mustCollector is an OTLP/HTTP trace receiver on 127.0.0.1.
func mustCollector(t *testing.T) (url string, spans func() []otlpSpan) {
	t.Helper()
	var mu sync.Mutex
	var got []otlpSpan
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					sp := otlpSpan{name: s.GetName(), trace: string(s.GetTraceId()), id: string(s.GetSpanId()),
						parent: string(s.GetParentSpanId()), attrs: map[string]string{}, failed: s.GetStatus().GetCode() == 2}
					for _, a := range s.GetAttributes() {
						sp.attrs[a.GetKey()] = a.GetValue().GetStringValue()
					}
					got = append(got, sp)
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []otlpSpan {
		mu.Lock()
		defer mu.Unlock()
		return append([]otlpSpan(nil), got...)
	}
}

// With tracing.otlp_endpoint set, each JSON-RPC call is a server span
// (continuing the caller's traceparent) whose child is the skill call's
// span around the sandbox call, failed ones with their reason.
func TestTracing(t *testing.T) {
	t.Parallel()
	collector, spans := mustCollector(t)
	dir := t.TempDir()
	mustPlugin(t, dir, "hostile", hostileManifest)
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Tracing.OTLPEndpoint = collector })
	sid := th.mustSession(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	r := th.callWith(t, map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"},
		"_cleveragents/skill/execute", map[string]any{"session_id": sid, "skill_id": "trap"})
	if r.Error == nil {
		t.Fatal("trap succeeded")
	}
	var call, skill otlpSpan
	if !waitFor(60*time.Second, func() bool {
		call, skill = otlpSpan{}, otlpSpan{}
		for _, s := range spans() {
			switch {
			case s.name == "_cleveragents/skill/execute" && s.attrs["skillhost.reason"] == "trap":
				call = s
			case s.name == "skill.execute" && s.attrs["skillhost.skill"] == "trap":
				skill = s
			}
		}
		return call.name != "" && skill.name != ""
	}) {
		t.Fatalf("the spans did not arrive: %+v", spans())
	}
	if hexID(call.trace) != traceID || hexID(call.parent) != "00f067aa0ba902b7" {
		t.Errorf("the call span did not continue the caller's trace: trace %x parent %x", call.trace, call.parent)
	}
	if skill.trace != call.trace || skill.parent != call.id || !skill.failed || !call.failed ||
		skill.attrs["skillhost.plugin"] != "hostile" || call.attrs["rpc.system"] != "jsonrpc" {
		t.Errorf("spans: call %+v, skill %+v", call, skill)
	}
}

func hexID(b string) string { return hex.EncodeToString([]byte(b)) }

// callWith makes one JSON-RPC call with extra headers.
func (th *testHost) callWith(t *testing.T, headers map[string]string, method string, params any) rpcResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := send(ctx, httpClient, th.URL+"/rpc", headers, rpcBody(method, params))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return r.RPC
}
