package a2a

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// VersionHeader is the HTTP header carrying the client's A2A version.
const VersionHeader = "A2A-Version"

// Method names, v1.0 and v0.3.
var (
	MethodsV10 = []string{"SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
		"GetExtendedAgentCard", "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
		"ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig"}
	MethodsV03 = []string{"message/send", "message/stream", "tasks/get", "tasks/list", "tasks/cancel", "tasks/resubscribe",
		"agent/getAuthenticatedExtendedCard", "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
		"tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete"}
)

// IsMethod reports whether method is an A2A method (v1.0 or v0.3 name):
// what an agent's own endpoint (POST /agents/{name}/rpc) serves.
func IsMethod(method string) bool {
	return slices.Contains(MethodsV10, method) || slices.Contains(MethodsV03, method)
}

// Register adds every A2A method (v1.0 and v0.3 names) to eng. The method
// name decides the wire shape of params and results.
func Register(eng *jsonrpc.Engine, svc *Service) {
	// Methods whose result streams are marked so the engine refuses them in
	// batches and as notifications before they start a task.
	opts := func(name string) []jsonrpc.MethodOption {
		switch name {
		case "SendStreamingMessage":
			return []jsonrpc.MethodOption{jsonrpc.Streaming()}
		case "SubscribeToTask": // as a2a-go's server does: its error (unknown or terminal task) is the stream's one event
			return []jsonrpc.MethodOption{jsonrpc.Streaming(), jsonrpc.ErrorsAsEvents()}
		case "message/stream", "tasks/resubscribe": // v0.3 clients read only SSE
			return []jsonrpc.MethodOption{jsonrpc.Streaming(), jsonrpc.ErrorsAsEvents()}
		}
		return nil
	}
	v1 := func(name string, h handler) {
		eng.RegisterA2A(name, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if err := CheckVersion(ctx, agentcard.Version10); err != nil {
				return nil, err
			}
			return h(ctx, req.Params)
		}, opts(name)...)
	}
	v0 := func(name string, h handler) {
		eng.Register(name, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if err := CheckVersion(ctx, agentcard.Version03); err != nil {
				return nil, err
			}
			return h(ctx, req.Params)
		}, append(opts(name), jsonrpc.ObjectData())...) // v0.3 clients decode data as an object
	}
	v1("SendMessage", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.SendMessageRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		t, err := svc.SendMessage(ctx, &req)
		if err != nil {
			return nil, err
		}
		return a2av1.StreamResponse{Event: t}, nil
	})
	v1("SendStreamingMessage", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.SendMessageRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		ts, err := svc.SendStreamingMessage(ctx, &req)
		return v1Stream(ts), err
	})
	v1("GetTask", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.GetTaskRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return svc.GetTask(ctx, &req)
	})
	v1("ListTasks", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.ListTasksRequest
		if len(p) > 0 {
			if err := decode(p, &req); err != nil {
				return nil, err
			}
		}
		if err := checkPageSize(p); err != nil {
			return nil, err
		}
		return svc.ListTasks(ctx, &req)
	})
	v1("CancelTask", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.CancelTaskRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return svc.CancelTask(ctx, &req)
	})
	v1("SubscribeToTask", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.SubscribeToTaskRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		ts, err := svc.SubscribeToTask(ctx, &req)
		return v1Stream(ts), err
	})
	v1("GetExtendedAgentCard", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.GetExtendedAgentCardRequest
		if len(p) > 0 && string(p) != "null" {
			if err := decode(p, &req); err != nil {
				return nil, err
			}
		}
		return svc.GetExtendedAgentCard(ctx, &req)
	})
	eng.Register(VerifyMethod, svc.verify)

	registerPush(v1, svc)
	registerV03(v0, svc)
}

// registerPush adds the push config methods (v1.0 names).
func registerPush(v1 func(string, handler), svc *Service) {
	v1("CreateTaskPushNotificationConfig", func(ctx context.Context, p json.RawMessage) (any, error) {
		var c a2av1.PushConfig
		if err := decode(p, &c); err != nil {
			return nil, err
		}
		return svc.CreatePushConfig(ctx, &c)
	})
	v1("GetTaskPushNotificationConfig", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.GetTaskPushConfigRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return svc.GetPushConfig(ctx, &req)
	})
	v1("ListTaskPushNotificationConfigs", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.ListTaskPushConfigRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return svc.ListPushConfigs(ctx, &req)
	})
	v1("DeleteTaskPushNotificationConfig", func(ctx context.Context, p json.RawMessage) (any, error) {
		var req a2av1.DeleteTaskPushConfigRequest
		if err := decode(p, &req); err != nil {
			return nil, err
		}
		return nil, svc.DeletePushConfig(ctx, &req)
	})
}

// CheckVersion applies the A2A-Version header: empty is accepted; "1.0" and
// "0.3" (patch suffixes allowed) must match the method's version; anything
// else is VersionNotSupported (-32009).
func CheckVersion(ctx context.Context, method string) error {
	h := strings.TrimSpace(jsonrpc.TransportFrom(ctx).Header(VersionHeader))
	if h == "" {
		return nil
	}
	var v string
	switch {
	case h == "1" || h == "1.0" || strings.HasPrefix(h, "1.0."):
		v = agentcard.Version10
	case h == "0.3" || strings.HasPrefix(h, "0.3."):
		v = agentcard.Version03
	default:
		return fault.Newf(fault.VersionNotSupported, fault.ReasonVersion, "A2A-Version %q is not supported; use 1.0 or 0.3", truncate(h, 32)).
			With("supported", []string{agentcard.Version10, agentcard.Version03})
	}
	if v != method {
		return fault.Newf(fault.VersionNotSupported, fault.ReasonVersion, "A2A-Version %s does not match this method, which is A2A %s", v, method).
			With("supported", []string{method})
	}
	return nil
}

func decode(p json.RawMessage, v any) error {
	if len(p) == 0 || string(p) == "null" {
		return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "params are required")
	}
	if err := json.Unmarshal(p, v); err != nil {
		return fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err, "params: "+truncate(err.Error(), 200))
	}
	return nil
}

// checkPageSize refuses a ListTasks pageSize given as 0 (the minimum is 1;
// an absent one is the default, which a2a-go's types cannot tell apart).
func checkPageSize(p json.RawMessage) error {
	var raw struct {
		PageSize *int `json:"pageSize"`
	}
	if len(p) > 0 && json.Unmarshal(p, &raw) == nil && raw.PageSize != nil && *raw.PageSize == 0 {
		return fault.Newf(fault.InvalidParams, fault.ReasonInvalidParams, "pageSize must be between 1 and %d", MaxPageSize)
	}
	return nil
}

// GetExtendedAgentCard returns the extended card (agentcard.Service's
// ExtendedCard) of the request's tenant, or of the agent its endpoint is
// restricted to.
func (s *Service) GetExtendedAgentCard(ctx context.Context, req *a2av1.GetExtendedAgentCardRequest) (*a2av1.AgentCard, error) {
	tenant, err := tenantOf(ctx, req.Tenant)
	if err != nil {
		return nil, err
	}
	return s.cfg.Cards.ExtendedCard(ctx, tenant)
}

// eventStream adapts a TaskStream to jsonrpc.Stream with a wire shape.
type eventStream struct {
	ts    *TaskStream
	shape func(a2av1.Event) (any, error)
}

func (e *eventStream) Next(ctx context.Context) (any, error) {
	ev, err := e.ts.NextEvent(ctx)
	if err != nil {
		return nil, err
	}
	return e.shape(ev)
}

func (e *eventStream) Close() error { return e.ts.Close() }

func v1Stream(ts *TaskStream) any {
	if ts == nil {
		return nil
	}
	return &eventStream{ts: ts, shape: func(ev a2av1.Event) (any, error) { return a2av1.StreamResponse{Event: ev}, nil }}
}
