// Package grpcx is the gRPC transport: the A2A gRPC binding on a listener of
// its own, served by grpc-go (HTTP/2, which Fiber's fasthttp does not
// speak). It owns no protocol logic: the service it serves (a2a's
// GRPCHandler, through a2a-go's a2agrpc) does that; grpcx counts
// connections, authenticates every call as the HTTP transport does, attaches
// the principal and the transport info, and bounds messages and streams.
//
//	srv := grpcx.New(grpcx.Config{GRPC: cfg.GRPC, Auth: authn, Errors: handler.Status}, handler) // the grpc.* section
//	ln, _ := net.Listen("tcp", "127.0.0.1:9090")
//	go srv.Serve(ln)
//	defer srv.Shutdown(ctx)
//
// Access is HTTP's: with API keys every call carries one in its metadata
// ("authorization: Bearer <key>" or "x-api-key: <key>"); without keys only
// loopback clients are served, as the local principal "loopback" (the HTTP
// transport's, so both bindings see the same tasks). A Server is safe for
// concurrent use.
package grpcx
