package jsonrpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func BenchmarkHandle(b *testing.B) {
	e := NewEngine(testLimits)
	e.Register("echo", func(ctx context.Context, req *Request) (any, error) { return len(req.Params), nil })
	// execute binds params and answers as skill/execute does.
	e.Register("execute", func(ctx context.Context, req *Request) (any, error) {
		var p struct {
			SessionID   string          `json:"session_id"`
			SkillID     string          `json:"skill_id"`
			SkillParams json.RawMessage `json:"skill_params"`
			Timeout     *float64        `json:"timeout"`
		}
		if err := req.Bind(&p); err != nil {
			return nil, err
		}
		return struct {
			SkillID string          `json:"skill_id"`
			Status  string          `json:"status"`
			Output  json.RawMessage `json:"output"`
		}{p.SkillID, "success", p.SkillParams}, nil
	})
	execute := []byte(`{"jsonrpc":"2.0","id":1,"method":"execute","params":{"session_id":"sess_0123456789abcdef","skill_id":"echo","skill_params":{"text":"hello, benchmark","n":12345}}}`)
	small := []byte(`{"jsonrpc":"2.0","method":"echo","params":{"session_id":"s1","text":"hello"},"id":1}`)
	var items []string
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`{"k%d":%d}`, i, i))
	}
	large := []byte(`{"jsonrpc":"2.0","method":"echo","params":{"session_id":"s1","items":[` + strings.Join(items, ",") + `]},"id":1}`)
	for _, bc := range []struct {
		name string
		body []byte
	}{{"small", small}, {"execute", execute}, {"large", large}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			b.ReportAllocs()
			for b.Loop() {
				if r := e.Handle(b.Context(), bc.body); r.Body == nil {
					b.Fatal("no response")
				}
			}
		})
	}
}
