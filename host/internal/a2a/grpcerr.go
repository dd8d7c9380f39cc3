package a2a

import (
	"context"
	"encoding/json"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GRPCStatus is err as the gRPC binding answers it: the google.rpc.Status
// of the HTTP+JSON binding's error body (REST.ErrorBody: the code named by
// host/fault's gRPC column, the message, the ErrorInfo with its reason,
// domain and metadata) as a gRPC status. One encoding serves both
// bindings, so they cannot disagree; a2a-go's clients map the code and
// ErrorInfo reason back to the protocol's errors (TASK_NOT_FOUND with
// NOT_FOUND is a2a.ErrTaskNotFound).
func (h *GRPCHandler) GRPCStatus(ctx context.Context, err error) error {
	body, _, _ := h.errs.ErrorBody(ctx, err)
	var b struct {
		Error struct {
			Status  string `json:"status"`
			Message string `json:"message"`
			Details []struct {
				Reason   string            `json:"reason"`
				Domain   string            `json:"domain"`
				Metadata map[string]string `json:"metadata"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &b) != nil {
		return status.Error(codes.Internal, "internal error")
	}
	code := codes.Internal
	if code.UnmarshalJSON([]byte(strconv.Quote(b.Error.Status))) != nil {
		code = codes.Internal
	}
	st := status.New(code, b.Error.Message)
	for _, d := range b.Error.Details {
		if with, err := st.WithDetails(&errdetails.ErrorInfo{Reason: d.Reason, Domain: d.Domain, Metadata: d.Metadata}); err == nil {
			st = with
		}
	}
	return st.Err()
}
