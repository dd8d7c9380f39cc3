package a2a

import (
	"context"
	"encoding/json"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/a2a/v03"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// handler is a method's handler over its raw params.
type handler = func(context.Context, json.RawMessage) (any, error)

// registerV03 adds the v0.3 names of the A2A methods (through v0): each
// decodes its v0.3 params into the v1.0 request (package v03), calls the
// same typed method as the v1.0 name and encodes the result in the v0.3
// shape. The task service itself speaks v1.0 only.
func registerV03(v0 func(string, handler), svc *Service) {
	v0("message/send", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.SendMessage(p)
		if err != nil {
			return nil, err
		}
		t, err := svc.SendMessage(ctx, req)
		if err != nil {
			return nil, err
		}
		return v03.Task(t), nil
	})
	v0("message/stream", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.SendMessage(p)
		if err != nil {
			return nil, err
		}
		ts, err := svc.SendStreamingMessage(ctx, req)
		return v03Stream(ts), err
	})
	v0("tasks/get", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.GetTask(p)
		if err != nil {
			return nil, err
		}
		t, err := svc.GetTask(ctx, req)
		if err != nil {
			return nil, err
		}
		return v03.Task(t), nil
	})
	v0("tasks/list", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.ListTasks(p)
		if err != nil {
			return nil, err
		}
		if err := checkPageSize(p); err != nil {
			return nil, err
		}
		resp, err := svc.ListTasks(ctx, req)
		if err != nil {
			return nil, err
		}
		return v03.ListTasksResponse(resp), nil
	})
	v0("tasks/cancel", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.CancelTask(p)
		if err != nil {
			return nil, err
		}
		t, err := svc.CancelTask(ctx, req)
		if err != nil {
			return nil, err
		}
		return v03.Task(t), nil
	})
	v0("tasks/resubscribe", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.SubscribeToTask(p)
		if err != nil {
			return nil, err
		}
		ts, err := svc.SubscribeToTask(ctx, req)
		return v03Stream(ts), err
	})
	v0("agent/getAuthenticatedExtendedCard", func(ctx context.Context, _ json.RawMessage) (any, error) {
		card, err := svc.cfg.Cards.ExtendedCard(ctx, jsonrpc.TransportFrom(ctx).Agent)
		if err != nil {
			return nil, err
		}
		return v03.Card(card), nil
	})
	registerPushV03(v0, svc)
}

// registerPushV03 adds the v0.3 names of the push config methods.
func registerPushV03(v0 func(string, handler), svc *Service) {
	v0("tasks/pushNotificationConfig/set", func(ctx context.Context, p json.RawMessage) (any, error) {
		c, err := v03.CreatePushConfig(p)
		if err != nil {
			return nil, err
		}
		out, err := svc.CreatePushConfig(ctx, c)
		if err != nil {
			return nil, err
		}
		return v03.PushConfig(out), nil
	})
	v0("tasks/pushNotificationConfig/get", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.GetPushConfig(p)
		if err != nil {
			return nil, err
		}
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
		return v03.PushConfig(out), nil
	})
	v0("tasks/pushNotificationConfig/list", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.ListPushConfigs(p)
		if err != nil {
			return nil, err
		}
		out, err := svc.ListPushConfigs(ctx, req)
		if err != nil {
			return nil, err
		}
		return v03.PushConfigs(out.Configs), nil
	})
	v0("tasks/pushNotificationConfig/delete", func(ctx context.Context, p json.RawMessage) (any, error) {
		req, err := v03.DeletePushConfig(p)
		if err != nil {
			return nil, err
		}
		return nil, svc.DeletePushConfig(ctx, req)
	})
}

// v03Stream is ts as a stream of v0.3 events.
func v03Stream(ts *TaskStream) any {
	if ts == nil {
		return nil
	}
	return &eventStream{ts: ts, shape: v03.Event}
}
