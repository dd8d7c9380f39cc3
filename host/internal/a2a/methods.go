package a2a

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	a2alegacy "github.com/a2aproject/a2a-go/a2a"
	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/skillhost/skillhost/host/fault"
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
	v1 := func(name string, h func(context.Context, json.RawMessage) (any, error)) {
		eng.RegisterA2A(name, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if err := checkVersion(ctx, Version10); err != nil {
				return nil, err
			}
			return h(ctx, req.Params)
		}, opts(name)...)
	}
	v0 := func(name string, h func(context.Context, json.RawMessage) (any, error)) {
		eng.Register(name, func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			if err := checkVersion(ctx, Version03); err != nil {
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
		tenant, err := tenantOf(ctx, req.Tenant)
		if err != nil {
			return nil, err
		}
		return svc.cfg.Cards.ExtendedCard(ctx, tenant)
	})
	eng.Register(VerifyMethod, svc.verify)

	v0("message/send", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := decodeV03Send(p)
		if err != nil {
			return nil, err
		}
		t, err := svc.SendMessage(ctx, req)
		if err != nil {
			return nil, err
		}
		return a2av0.FromV1Task(t), nil
	})
	v0("message/stream", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := decodeV03Send(p)
		if err != nil {
			return nil, err
		}
		ts, err := svc.SendStreamingMessage(ctx, req)
		return v03Stream(ts), err
	})
	v0("tasks/get", func(ctx context.Context, p json.RawMessage) (any, error) {
		var q a2alegacy.TaskQueryParams
		if err := decode(p, &q); err != nil {
			return nil, err
		}
		t, err := svc.GetTask(ctx, a2av0.ToV1GetTaskRequest(&q))
		if err != nil {
			return nil, err
		}
		return a2av0.FromV1Task(t), nil
	})
	v0("tasks/list", func(ctx context.Context, p json.RawMessage) (any, error) {
		var q a2alegacy.ListTasksRequest
		if len(p) > 0 {
			if err := decode(p, &q); err != nil {
				return nil, err
			}
		}
		if err := checkPageSize(p); err != nil {
			return nil, err
		}
		resp, err := svc.ListTasks(ctx, a2av0.ToV1ListTasksRequest(&q))
		if err != nil {
			return nil, err
		}
		return a2av0.FromV1ListTasksResponse(resp), nil
	})
	v0("tasks/cancel", func(ctx context.Context, p json.RawMessage) (any, error) {
		var q a2alegacy.TaskIDParams
		if err := decode(p, &q); err != nil {
			return nil, err
		}
		t, err := svc.CancelTask(ctx, a2av0.ToV1CancelTaskRequest(&q))
		if err != nil {
			return nil, err
		}
		return a2av0.FromV1Task(t), nil
	})
	v0("tasks/resubscribe", func(ctx context.Context, p json.RawMessage) (any, error) {
		var q a2alegacy.TaskIDParams
		if err := decode(p, &q); err != nil {
			return nil, err
		}
		ts, err := svc.SubscribeToTask(ctx, a2av0.ToV1SubscribeToTaskRequest(&q))
		return v03Stream(ts), err
	})
	v0("agent/getAuthenticatedExtendedCard", func(ctx context.Context, _ json.RawMessage) (any, error) {
		card, err := svc.cfg.Cards.ExtendedCard(ctx, jsonrpc.TransportFrom(ctx).Agent)
		if err != nil {
			return nil, err
		}
		return LegacyCard(card), nil
	})

	registerPush(v1, v0, svc)
}

// registerPush adds the push config methods, v1.0 and v0.3 names.
func registerPush(v1, v0 func(string, func(context.Context, json.RawMessage) (any, error)), svc *Service) {
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
	v0("tasks/pushNotificationConfig/set", func(ctx context.Context, p json.RawMessage) (any, error) {
		var c a2alegacy.TaskPushConfig
		if err := decode(p, &c); err != nil {
			return nil, err
		}
		out, err := svc.CreatePushConfig(ctx, a2av0.ToV1PushConfig(&c))
		if err != nil {
			return nil, err
		}
		return a2av0.FromV1PushConfig(out), nil
	})
	v0("tasks/pushNotificationConfig/get", func(ctx context.Context, p json.RawMessage) (any, error) {
		var q a2alegacy.GetTaskPushConfigParams
		if err := decode(p, &q); err != nil {
			return nil, err
		}
		req := a2av0.ToV1GetTaskPushConfigRequest(&q)
		if req.ID == "" { // v0.3 allows omitting the id when a task has one config
			list, err := svc.ListPushConfigs(ctx, &a2av1.ListTaskPushConfigRequest{TaskID: req.TaskID})
			if err != nil {
				return nil, err
			}
			if len(list.Configs) > 0 {
				req.ID = list.Configs[0].ID
			}
		}
		out, err := svc.GetPushConfig(ctx, req)
		if err != nil {
			return nil, err
		}
		return a2av0.FromV1PushConfig(out), nil
	})
	v0("tasks/pushNotificationConfig/list", func(ctx context.Context, p json.RawMessage) (any, error) {
		var q a2alegacy.ListTaskPushConfigParams
		if err := decode(p, &q); err != nil {
			return nil, err
		}
		out, err := svc.ListPushConfigs(ctx, a2av0.ToV1ListTaskPushConfigRequest(&q))
		if err != nil {
			return nil, err
		}
		return a2av0.FromV1PushConfigs(out.Configs), nil
	})
	v0("tasks/pushNotificationConfig/delete", func(ctx context.Context, p json.RawMessage) (any, error) {
		var q a2alegacy.DeleteTaskPushConfigParams
		if err := decode(p, &q); err != nil {
			return nil, err
		}
		return nil, svc.DeletePushConfig(ctx, a2av0.ToV1DeleteTaskPushConfigRequest(&q))
	})
}

// checkVersion applies the A2A-Version header: empty is accepted; "1.0" and
// "0.3" (patch suffixes allowed) must match the method's version; anything
// else is VersionNotSupported (-32009).
func checkVersion(ctx context.Context, method string) error {
	h := strings.TrimSpace(jsonrpc.TransportFrom(ctx).Header(VersionHeader))
	if h == "" {
		return nil
	}
	var v string
	switch {
	case h == "1" || h == "1.0" || strings.HasPrefix(h, "1.0."):
		v = Version10
	case h == "0.3" || strings.HasPrefix(h, "0.3."):
		v = Version03
	default:
		return fault.Newf(fault.VersionNotSupported, fault.ReasonVersion, "A2A-Version %q is not supported; use 1.0 or 0.3", truncate(h, 32)).
			With("supported", []string{Version10, Version03})
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

func decodeV03Send(p json.RawMessage) (*a2av1.SendMessageRequest, error) {
	var legacy a2alegacy.MessageSendParams
	if err := decode(p, &legacy); err != nil {
		return nil, err
	}
	if legacy.Message == nil {
		return nil, fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "params.message is required")
	}
	req, err := a2av0.ToV1SendMessageRequest(&legacy)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err, "params.message: "+truncate(err.Error(), 200))
	}
	return req, nil
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

func v03Stream(ts *TaskStream) any {
	if ts == nil {
		return nil
	}
	return &eventStream{ts: ts, shape: func(ev a2av1.Event) (any, error) {
		out, err := a2av0.FromV1Event(ev)
		if err != nil {
			return nil, fault.Wrap(fault.Internal, fault.ReasonInternal, err, "")
		}
		return out, nil
	}}
}

// LegacyCard is card in the v0.3 shape, without null members (a2av0 leaves
// an empty skill list nil).
func LegacyCard(card *a2av1.AgentCard) *a2alegacy.AgentCard {
	out := a2av0.FromV1AgentCard(card)
	if out.Skills == nil {
		out.Skills = []a2alegacy.AgentSkill{}
	}
	if out.AdditionalInterfaces == nil {
		out.AdditionalInterfaces = []a2alegacy.AgentInterface{}
	}
	return out
}
