package grpcbind

import (
	"context"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Status is err as the gRPC binding answers it: the google.rpc.Status
// the HTTP+JSON binding sends (fault's Error.MarshalStatus) as a gRPC
// status — the code named by Error.GRPCStatus (host/fault's table), the
// message, and the one ErrorInfo (Error.Info: the kind's A2A reason in the
// A2A domain, skillhost's reason, request id and timestamp in the
// metadata). a2a-go's clients map the code and ErrorInfo reason back to the
// protocol's errors (NOT_FOUND with TASK_NOT_FOUND is a2a.ErrTaskNotFound).
func (h *Handler) Status(ctx context.Context, err error) error {
	fe, hidden := fault.Safe(err)
	if hidden {
		h.log.ErrorContext(ctx, "a2a grpc: internal error", "err", err)
	}
	st := status.New(grpcCode(fe.GRPCStatus()), fe.Message())
	info := fe.Info(jsonrpc.ErrorMeta(ctx))
	reason, _ := info["reason"].(string)
	domain, _ := info["domain"].(string)
	meta, _ := info["metadata"].(map[string]string)
	if with, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: domain, Metadata: meta}); err == nil {
		st = with
	}
	return st.Err()
}

// grpcCode is the gRPC code of a google.rpc.Code name ("NOT_FOUND");
// INTERNAL for a name grpc-go does not know.
func grpcCode(name string) codes.Code {
	var c codes.Code
	if c.UnmarshalJSON([]byte(strconv.Quote(name))) != nil {
		return codes.Internal
	}
	return c
}
