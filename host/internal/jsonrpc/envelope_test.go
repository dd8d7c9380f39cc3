package jsonrpc

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

func metaEngine(t *testing.T, opts ...Option) *Engine {
	t.Helper()
	e := NewEngine(testLimits, opts...)
	e.Register("meta", func(ctx context.Context, req *Request) (any, error) {
		var p map[string]any
		if err := req.Bind(&p); err != nil {
			return nil, err
		}
		return map[string]any{"meta": req.Meta, "params": p}, nil
	})
	return e
}

func TestEnvelopeReadIntoMeta(t *testing.T) {
	t.Parallel()
	body := mustHandle(t, metaEngine(t), `{"jsonrpc":"2.0","method":"meta","id":1,"params":
		{"session_id":"s1","request_id":"r1","timestamp":"2024-04-19T10:30:00Z","version":"1.0","x":1}}`)
	want := `{"jsonrpc":"2.0","result":{"meta":{"RequestID":"r1","SessionID":"s1","Timestamp":"2024-04-19T10:30:00Z","Version":"1.0"},` +
		`"params":{"request_id":"r1","session_id":"s1","timestamp":"2024-04-19T10:30:00Z","version":"1.0","x":1}},"id":1}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("handler view (-want +got):\n%s", diff)
	}
}

func TestEnvelopeVersion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string
		ok      bool
	}{
		{"1", true}, {"1.0", true}, {"1.0.0", true}, {"1.7", true}, {"1.2.30", true},
		{"2.0", false}, {"0.9", false}, {"1.0.0.0", false}, {"v1", false}, {"", false},
		{"1.x", false}, {"1.0-beta", false}, {" 1.0", false}, {"10.0", false},
	}
	e := metaEngine(t)
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			r := mustResp(t, mustHandle(t, e, `{"jsonrpc":"2.0","method":"meta","id":1,"params":{"version":"`+tt.version+`"}}`))
			if tt.ok {
				if r.Error != nil {
					t.Fatalf("version %q refused: %+v", tt.version, r.Error)
				}
				return
			}
			if r.Error == nil || r.Error.Code != -32602 || r.Error.Data["reason"] != fault.ReasonVersion {
				t.Fatalf("version %q: want -32602 unsupported_version, got %+v", tt.version, r.Error)
			}
			if !strings.Contains(r.Error.Message, SupportedVersion) {
				t.Errorf("message %q does not name the supported version", r.Error.Message)
			}
		})
	}
	t.Run("check disabled", func(t *testing.T) {
		t.Parallel()
		r := mustResp(t, mustHandle(t, metaEngine(t, WithVersionCheck(nil)), `{"jsonrpc":"2.0","method":"meta","id":1,"params":{"version":"2.0"}}`))
		if r.Error != nil {
			t.Errorf("WithVersionCheck(nil) refused 2.0: %+v", r.Error)
		}
	})
}

func TestEnvelopeNonString(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"request_id", "timestamp", "version", "session_id"} {
		for _, val := range []string{`1`, `null`, `{}`, `["a"]`, `true`} {
			t.Run(field+"="+val, func(t *testing.T) {
				t.Parallel()
				r := mustResp(t, mustHandle(t, metaEngine(t), `{"jsonrpc":"2.0","method":"meta","id":1,"params":{"`+field+`":`+val+`}}`))
				if r.Error == nil || r.Error.Code != -32602 || r.Error.Data["field"] != field ||
					!strings.Contains(r.Error.Message, field) {
					t.Errorf("want -32602 naming %s, got %+v", field, r.Error)
				}
			})
		}
	}
}

func TestEnvelopeIgnoredForArrayParamsAndNested(t *testing.T) {
	t.Parallel()
	e := metaEngine(t)
	r := mustResp(t, mustHandle(t, e, `{"jsonrpc":"2.0","method":"meta","id":1,"params":{"inner":{"version":"9","session_id":3}}}`))
	if r.Error != nil {
		t.Errorf("nested envelope-like members were checked: %+v", r.Error)
	}
	e.Register("arr", func(ctx context.Context, req *Request) (any, error) { return req.Meta, nil })
	r = mustResp(t, mustHandle(t, e, `{"jsonrpc":"2.0","method":"arr","id":1,"params":[{"version":"9"}]}`))
	if r.Error != nil || string(r.Result) != `{"RequestID":"","SessionID":"","Timestamp":"","Version":""}` {
		t.Errorf("array params: got %s %+v", r.Result, r.Error)
	}
}
