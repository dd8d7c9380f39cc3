package fault_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/skillhost/skillhost/host/fault"
)

// Raising an error: a kind decides the code, a reason tells callers what
// exactly happened, data carries details.
func ExampleNewf() {
	err := fault.Newf(fault.ResourceExhausted, fault.ReasonOutputLimit, "output is %d bytes", 2<<20).With("limit_bytes", 1<<20)
	fmt.Println(err.Kind.Code(), err.Reason, err.Data["limit_bytes"])
	fmt.Println(err)
	// Output:
	// -32106 output_limit 1048576
	// Resource exhausted: output is 2097152 bytes
}

// Matching: by kind with the sentinels, by kind and reason with a template;
// context errors and plain errors are classified too.
func ExampleFrom() {
	err := fmt.Errorf("calling: %w", fault.New(fault.Timeout, fault.ReasonTimeout, "too slow"))
	fmt.Println(errors.Is(err, fault.ErrTimeout), errors.Is(err, fault.ErrResourceExhausted))
	fmt.Println(errors.Is(err, fault.New(fault.Timeout, fault.ReasonTimeout, "")))
	fmt.Println(fault.From(context.DeadlineExceeded).Reason, fault.KindOf(errors.New("boom")))
	// Output:
	// true false
	// true
	// timeout Internal
}

// The code table, as a client decoding a wire error sees it.
func ExampleKindOfCode() {
	k, known := fault.KindOfCode(-32104)
	fmt.Println(k, known, k.TaskState(), k.HTTPStatus())
	for _, k := range fault.Kinds()[:4] {
		fmt.Println(k.Code(), k.Message())
	}
	// Output:
	// Timeout true TASK_STATE_FAILED 504
	// -32603 Internal error
	// -32700 Parse error
	// -32600 Invalid Request
	// -32601 Method not found
}
