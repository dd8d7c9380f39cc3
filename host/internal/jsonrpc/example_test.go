package jsonrpc_test

import (
	"context"
	"fmt"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

func ExampleEngine() {
	// The host passes its rpc.* keys.
	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: 1 << 20, MaxBatch: 64, BatchConcurrency: 8, MaxBatchResponseBytes: 8 << 20})
	eng.Register("greet", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		var p struct {
			Name string `json:"name"`
		}
		if err := req.Bind(&p); err != nil {
			return nil, err
		}
		if p.Name == "" {
			return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, `"name" is required`)
		}
		return "hello " + p.Name, nil
	})
	reply := eng.Handle(context.Background(), []byte(
		`{"jsonrpc":"2.0","method":"greet","params":{"name":"ada","version":"1.0","session_id":"s1"},"id":1}`))
	fmt.Println(string(reply.Body))
	// Output: {"jsonrpc":"2.0","result":"hello ada","id":1}
}
