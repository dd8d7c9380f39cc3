package jsonrpc

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

func BenchmarkHandle(b *testing.B) {
	e := NewEngine()
	e.Register("echo", func(ctx context.Context, req *Request) (any, error) { return len(req.Params), nil })
	small := []byte(`{"jsonrpc":"2.0","method":"echo","params":{"session_id":"s1","text":"hello"},"id":1}`)
	var items []string
	for i := range 20000 {
		items = append(items, fmt.Sprintf(`{"k%d":%d}`, i, i))
	}
	large := []byte(`{"jsonrpc":"2.0","method":"echo","params":{"session_id":"s1","items":[` + strings.Join(items, ",") + `]},"id":1}`)
	for _, bc := range []struct {
		name string
		body []byte
	}{{"small", small}, {"large", large}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if r := e.Handle(b.Context(), bc.body); r.Body == nil {
					b.Fatal("no response")
				}
			}
		})
	}
}
