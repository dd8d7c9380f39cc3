// Package grpcbind is the A2A v1.0 gRPC binding: a2a-go's
// a2asrv.RequestHandler over the task service's typed methods, each run
// through the engine as the v1.0 method of the same name.
package grpcbind

import (
	"context"
	"errors"
	"io"
	"iter"
	"log/slog"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"

	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
)

// Runner runs a typed call in the place of a registered method, through
// the engine's middleware (scopes, limits, metrics, access lines);
// *jsonrpc.Engine implements it.
type Runner interface {
	Run(ctx context.Context, method string, call func(ctx context.Context) (any, error)) (any, error)
}

// Handler is the A2A gRPC binding's request handler: a2a-go's
// a2asrv.RequestHandler over the Service's typed methods, each run as the
// v1.0 method of the same name through the engine (Runner), so a gRPC call
// meets the checks a JSON-RPC or HTTP+JSON call meets. a2a-go's a2agrpc
// translates the protobuf messages; errors go back as gRPC statuses built
// from the HTTP+JSON binding's google.rpc.Status (Status), which
// a2agrpc passes through unchanged. It is safe for concurrent use.
type Handler struct {
	run Runner
	svc *a2a.Service
	log *slog.Logger
}

var _ a2asrv.RequestHandler = (*Handler)(nil)

// New returns the handler of the gRPC binding: svc's methods run through
// run (the engine the A2A methods are registered on).
func New(run Runner, svc *a2a.Service, log *slog.Logger) *Handler {
	if log == nil {
		log = slog.Default()
	}
	return &Handler{run: run, svc: svc, log: log}
}

// RegisterWith registers the A2A gRPC service (a2a-go's a2agrpc over h)
// with s.
func (h *Handler) RegisterWith(s *grpc.Server) { a2agrpc.NewHandler(h).RegisterWith(s) }

// call runs f as method (A2A v1.0) and turns its error into a gRPC status.
func call[T any](ctx context.Context, h *Handler, method string, f func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	res, err := h.run.Run(ctx, method, func(ctx context.Context) (any, error) {
		if err := a2a.CheckVersion(ctx, agentcard.Version10); err != nil {
			return nil, err
		}
		return f(ctx)
	})
	if err != nil {
		return zero, h.Status(ctx, err)
	}
	v, _ := res.(T)
	return v, nil
}

// GetTask implements a2asrv.RequestHandler.
func (h *Handler) GetTask(ctx context.Context, req *a2av1.GetTaskRequest) (*a2av1.Task, error) {
	return call(ctx, h, "GetTask", func(ctx context.Context) (*a2av1.Task, error) { return h.svc.GetTask(ctx, req) })
}

// ListTasks implements a2asrv.RequestHandler.
func (h *Handler) ListTasks(ctx context.Context, req *a2av1.ListTasksRequest) (*a2av1.ListTasksResponse, error) {
	return call(ctx, h, "ListTasks", func(ctx context.Context) (*a2av1.ListTasksResponse, error) { return h.svc.ListTasks(ctx, req) })
}

// CancelTask implements a2asrv.RequestHandler.
func (h *Handler) CancelTask(ctx context.Context, req *a2av1.CancelTaskRequest) (*a2av1.Task, error) {
	return call(ctx, h, "CancelTask", func(ctx context.Context) (*a2av1.Task, error) { return h.svc.CancelTask(ctx, req) })
}

// SendMessage implements a2asrv.RequestHandler: the task, when it ends or
// is interrupted (or at once with returnImmediately).
func (h *Handler) SendMessage(ctx context.Context, req *a2av1.SendMessageRequest) (a2av1.SendMessageResult, error) {
	t, err := call(ctx, h, "SendMessage", func(ctx context.Context) (*a2av1.Task, error) { return h.svc.SendMessage(ctx, req) })
	if err != nil {
		return nil, err
	}
	return t, nil
}

// SendStreamingMessage implements a2asrv.RequestHandler.
func (h *Handler) SendStreamingMessage(ctx context.Context, req *a2av1.SendMessageRequest) iter.Seq2[a2av1.Event, error] {
	return h.stream(ctx, "SendStreamingMessage", func(ctx context.Context) (*a2a.TaskStream, error) { return h.svc.SendStreamingMessage(ctx, req) })
}

// SubscribeToTask implements a2asrv.RequestHandler.
func (h *Handler) SubscribeToTask(ctx context.Context, req *a2av1.SubscribeToTaskRequest) iter.Seq2[a2av1.Event, error] {
	return h.stream(ctx, "SubscribeToTask", func(ctx context.Context) (*a2a.TaskStream, error) { return h.svc.SubscribeToTask(ctx, req) })
}

// stream opens a task stream as method (its task stream unit is taken as
// for SSE: a2a.max_streams and the key's share) and yields its events
// until the task ends or the client leaves; the stream is closed then.
func (h *Handler) stream(ctx context.Context, method string, open func(ctx context.Context) (*a2a.TaskStream, error)) iter.Seq2[a2av1.Event, error] {
	return func(yield func(a2av1.Event, error) bool) {
		ts, err := call(ctx, h, method, open)
		if err != nil {
			yield(nil, err)
			return
		}
		defer func() {
			if err := ts.Close(); err != nil {
				h.log.DebugContext(ctx, "a2a grpc: closing a task stream", "method", method, "err", err)
			}
		}()
		for {
			ev, err := ts.NextEvent(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if ctx.Err() == nil { // the client is still there to be told
					yield(nil, h.Status(ctx, err))
				}
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// GetTaskPushConfig implements a2asrv.RequestHandler.
func (h *Handler) GetTaskPushConfig(ctx context.Context, req *a2av1.GetTaskPushConfigRequest) (*a2av1.PushConfig, error) {
	return call(ctx, h, "GetTaskPushNotificationConfig", func(ctx context.Context) (*a2av1.PushConfig, error) {
		return h.svc.GetPushConfig(ctx, req)
	})
}

// ListTaskPushConfigs implements a2asrv.RequestHandler.
func (h *Handler) ListTaskPushConfigs(ctx context.Context, req *a2av1.ListTaskPushConfigRequest) (*a2av1.ListTaskPushConfigResponse, error) {
	return call(ctx, h, "ListTaskPushNotificationConfigs", func(ctx context.Context) (*a2av1.ListTaskPushConfigResponse, error) {
		return h.svc.ListPushConfigs(ctx, req)
	})
}

// CreateTaskPushConfig implements a2asrv.RequestHandler.
func (h *Handler) CreateTaskPushConfig(ctx context.Context, req *a2av1.PushConfig) (*a2av1.PushConfig, error) {
	return call(ctx, h, "CreateTaskPushNotificationConfig", func(ctx context.Context) (*a2av1.PushConfig, error) {
		return h.svc.CreatePushConfig(ctx, req)
	})
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler.
func (h *Handler) DeleteTaskPushConfig(ctx context.Context, req *a2av1.DeleteTaskPushConfigRequest) error {
	_, err := call(ctx, h, "DeleteTaskPushNotificationConfig", func(ctx context.Context) (any, error) {
		return nil, h.svc.DeletePushConfig(ctx, req)
	})
	return err
}

// GetExtendedAgentCard implements a2asrv.RequestHandler.
func (h *Handler) GetExtendedAgentCard(ctx context.Context, req *a2av1.GetExtendedAgentCardRequest) (*a2av1.AgentCard, error) {
	return call(ctx, h, "GetExtendedAgentCard", func(ctx context.Context) (*a2av1.AgentCard, error) {
		return h.svc.GetExtendedAgentCard(ctx, req)
	})
}
