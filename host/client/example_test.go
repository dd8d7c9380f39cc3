package client_test

import (
	"context"
	"fmt"

	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

func ExampleCall() {
	eng := jsonrpc.NewEngine()
	eng.Register("add", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
		var p []int
		if err := req.Bind(&p); err != nil {
			return nil, err
		}
		return p[0] + p[1], nil
	})
	doer := func(ctx context.Context, body []byte) ([]byte, error) { return eng.Handle(ctx, body).Body, nil }

	var sum int
	err := client.Call(context.Background(), doer, "add", []int{2, 3}, &sum)
	fmt.Println(sum, err)

	err = client.Call(context.Background(), doer, "mul", []int{2, 3}, nil)
	fmt.Println(fault.KindOf(err), fault.From(err).Reason)
	// Output:
	// 5 <nil>
	// MethodNotFound unknown_method
}
