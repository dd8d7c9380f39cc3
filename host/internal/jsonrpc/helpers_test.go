package jsonrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// specEngine registers the methods used by the JSON-RPC 2.0 specification's
// examples (section 7).
func specEngine(t testing.TB, notified *atomic.Int64, opts ...Option) *Engine {
	t.Helper()
	e := NewEngine(testLimits, opts...)
	e.Register("subtract", func(ctx context.Context, req *Request) (any, error) {
		if kindOf(req.Params) == '[' {
			var p []int
			if err := req.Bind(&p); err != nil {
				return nil, err
			}
			if len(p) != 2 {
				return nil, errors.New("want two numbers")
			}
			return p[0] - p[1], nil
		}
		var p struct {
			Minuend    int `json:"minuend"`
			Subtrahend int `json:"subtrahend"`
		}
		if err := req.Bind(&p); err != nil {
			return nil, err
		}
		return p.Minuend - p.Subtrahend, nil
	})
	e.Register("sum", func(ctx context.Context, req *Request) (any, error) {
		var p []int
		if err := req.Bind(&p); err != nil {
			return nil, err
		}
		total := 0
		for _, n := range p {
			total += n
		}
		return total, nil
	})
	notify := func(ctx context.Context, req *Request) (any, error) {
		if notified != nil {
			notified.Add(1)
		}
		return nil, nil
	}
	e.Register("notify_hello", notify)
	e.Register("notify_sum", notify)
	e.Register("update", notify)
	e.Register("get_data", func(ctx context.Context, req *Request) (any, error) {
		return []any{"hello", 5}, nil
	})
	return e
}

type golden struct {
	name     string
	request  []byte
	response []byte // empty: no response
}

func mustReadGoldens(t testing.TB) []golden {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "spec", "*.golden"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	var out []golden
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		req, resp, ok := bytes.Cut(b, []byte("\n---\n"))
		if !ok {
			t.Fatalf("%s: no --- separator line", f)
		}
		out = append(out, golden{
			name:     strings.TrimSuffix(filepath.Base(f), ".golden"),
			request:  bytes.TrimSpace(req),
			response: bytes.TrimSpace(resp),
		})
	}
	return out
}

// mustNormalize parses a response and replaces the values of every error's
// data.request_id and data.timestamp with "*", failing when either is
// missing or malformed.
func mustNormalize(t testing.TB, body []byte) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("response is not JSON: %v\n%s", err, body)
	}
	if dec.More() {
		t.Fatalf("trailing data after response: %s", body)
	}
	normalizeErrors(t, v)
	return v
}

func normalizeErrors(t testing.TB, v any) {
	t.Helper()
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			normalizeErrors(t, e)
		}
	case map[string]any:
		e, ok := x["error"].(map[string]any)
		if !ok {
			return
		}
		data, ok := e["data"].(map[string]any)
		if !ok {
			t.Fatalf("error without data object: %v", x)
		}
		for _, k := range []string{"request_id", "timestamp"} {
			s, ok := data[k].(string)
			if !ok || s == "" {
				t.Fatalf("error data.%s missing or not a string: %v", k, data)
			}
			if s == "*" {
				continue
			}
			if k == "timestamp" {
				ts, err := time.Parse(time.RFC3339Nano, s)
				if err != nil || ts.Location() != time.UTC {
					t.Fatalf("timestamp %q is not RFC 3339 UTC: %v", s, err)
				}
			}
			data[k] = "*"
		}
	}
}

// testLimits are the limits the tests' engines run with (the host's
// defaults, rpc.*), unless a test adjusts one with the options below.
var testLimits = Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20}

func withMaxBody(n int) Option          { return func(e *Engine) { e.maxBody = n } }
func withMaxBatch(n int) Option         { return func(e *Engine) { e.maxBatch = n } }
func withBatchConcurrency(n int) Option { return func(e *Engine) { e.batchConc = n } }
func withMaxBatchResponse(n int) Option { return func(e *Engine) { e.maxBatchResponse = n } }
func withResponseBudget(n int64) Option {
	return func(e *Engine) { e.budget = &responseBudget{max: n} }
}
