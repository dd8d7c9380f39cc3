// Package jsonrpc is skillhost's transport-agnostic JSON-RPC 2.0 engine.
//
// An Engine holds the method table. Transports (HTTP, stdio) hand it raw
// bodies and send back what it returns:
//
//	eng := jsonrpc.NewEngine(jsonrpc.Limits{MaxBodyBytes: …, MaxBatch: …, BatchConcurrency: …, MaxBatchResponseBytes: …}, jsonrpc.WithLogger(logger))
//	eng.Register("echo", func(ctx context.Context, req *jsonrpc.Request) (any, error) {
//		var p struct{ Text string `json:"text"` }
//		if err := req.Bind(&p); err != nil {
//			return nil, err // -32602 naming the bad field
//		}
//		return p, nil
//	})
//	reply := eng.Handle(ctx, body) // reply.Body (nil: nothing to send), or
//	err := reply.Pump(ctx, send)   // when reply.Streaming(): one response per event
//
// # Wire rules
//
//   - A body is exactly one JSON value (surrounding whitespace allowed).
//     Anything else, including trailing bytes after the value, is -32700
//     (reason parse_error) with id null.
//   - A request object needs "jsonrpc":"2.0", a non-empty string "method",
//     and "params" absent, an array or an object; the "id" must be a string,
//     a number or null and is echoed byte for byte (1.0 stays 1.0,
//     12345678901234567890 is not rounded). Violations are -32600 (reason
//     invalid_request); the id is echoed when it was valid, else null.
//     Members other than these four are ignored.
//   - A member name repeated in any object of a request, at any depth, is
//     -32600: parsers disagree on which duplicate wins, so a proxy and the
//     host could read different requests from the same bytes.
//   - Notifications (no "id" member) never get a response, in a batch too;
//     a batch of notifications only returns nothing. "[]" is one -32600
//     object (reason empty_batch); invalid batch elements each get -32600.
//   - Limits: WithMaxBodyBytes (default 1 MiB, reason body_too_large) and
//     WithMaxBatch (default 64, reason batch_too_large), both -32600. Batch
//     elements run concurrently, at most WithBatchConcurrency (default 8) at
//     a time; responses keep request order. A batch's responses together
//     stay under WithMaxBatchResponseBytes (default 8 MiB): past it elements
//     get -32106 output_limit and are not run. WithResponseBudget caps the
//     response bytes held for every client together until the transport
//     calls Reply.Done (-32106 response_budget past it).
//   - Unknown method: -32601, reason unknown_method, message naming it.
//
// # Envelope
//
// When params is an object its spec-001 envelope members request_id,
// timestamp, version and session_id are read into Request.Meta; a
// non-string value is -32602 naming the member. version must pass the
// version check (default AcceptVersion1: "1", "1.x", "1.x.y"); otherwise
// -32602 with reason unsupported_version. Handlers still see the full
// params, and Request.Bind allows the envelope members while refusing any
// other unknown member.
//
// # Errors
//
// Handlers return *fault.Error; host/fault encodes the error member
// (Error.MarshalRPC), the engine the envelope around it. Every error
// response's data is an object with request_id (envelope, else
// TransportInfo.RequestID, else generated), timestamp (UTC, milliseconds),
// reason, session_id when known and the fault's Data; for A2A kinds
// (-32001..-32009) and every error of an A2A v1.0 method data is instead an
// array holding one google.rpc.ErrorInfo: the kind's A2A reason in the A2A
// domain (a2a-protocol.org), skillhost's reason and the same members as
// strings in its metadata. Plain errors become -32603 "internal error"
// (fault.Safe: the cause is logged, never sent); handler panics are
// recovered, logged with their stack, and answered with -32603.
//
// A handler result implementing Stream makes a streaming Reply, which every
// transport delivers with Reply.Pump, the one stream pump: one response per
// event, an error in the method's own style, panics recovered, the stream
// closed at the end. Inside a batch or for a notification a Stream is closed
// (when it is an io.Closer) and refused with -32600, reason
// stream_not_batchable.
//
// The client side is the public package host/client: it sends one request
// through any transport and turns an error response back into a *fault.Error.
package jsonrpc
