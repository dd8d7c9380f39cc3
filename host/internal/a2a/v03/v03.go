// Package v03 is skillhost's one place for A2A v0.3, the protocol
// generation before v1.0: it decodes v0.3 JSON-RPC params into the v1.0
// requests the task service takes, encodes v1.0 results, events and cards
// in the v0.3 shapes, and renders the union card (v1.0 and v0.3 members
// side by side) that clients of both generations read. Everything else in
// host/internal/a2a speaks v1.0 only. The conversions are a2a-go's
// (a2acompat/a2av0); this package adds the error mapping (InvalidParams
// from host/fault) and the few places where skillhost's wire differs.
package v03

import (
	"encoding/json"

	a2alegacy "github.com/a2aproject/a2a-go/a2a"
	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/skillhost/skillhost/host/fault"
)

// decode reads required params into v (InvalidParams when absent or not
// decodable), as the v1.0 methods do.
func decode(p json.RawMessage, v any) error {
	if len(p) == 0 || string(p) == "null" {
		return fault.New(fault.InvalidParams, fault.ReasonInvalidParams, "params are required")
	}
	if err := json.Unmarshal(p, v); err != nil {
		return fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err, "params: "+truncate(err.Error(), 200))
	}
	return nil
}

// SendMessage decodes message/send and message/stream params.
func SendMessage(p json.RawMessage) (*a2av1.SendMessageRequest, error) {
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

// GetTask decodes tasks/get params.
func GetTask(p json.RawMessage) (*a2av1.GetTaskRequest, error) {
	var q a2alegacy.TaskQueryParams
	if err := decode(p, &q); err != nil {
		return nil, err
	}
	return a2av0.ToV1GetTaskRequest(&q), nil
}

// ListTasks decodes tasks/list params (absent params list with defaults).
func ListTasks(p json.RawMessage) (*a2av1.ListTasksRequest, error) {
	var q a2alegacy.ListTasksRequest
	if len(p) > 0 {
		if err := decode(p, &q); err != nil {
			return nil, err
		}
	}
	return a2av0.ToV1ListTasksRequest(&q), nil
}

// CancelTask decodes tasks/cancel params.
func CancelTask(p json.RawMessage) (*a2av1.CancelTaskRequest, error) {
	var q a2alegacy.TaskIDParams
	if err := decode(p, &q); err != nil {
		return nil, err
	}
	return a2av0.ToV1CancelTaskRequest(&q), nil
}

// SubscribeToTask decodes tasks/resubscribe params.
func SubscribeToTask(p json.RawMessage) (*a2av1.SubscribeToTaskRequest, error) {
	var q a2alegacy.TaskIDParams
	if err := decode(p, &q); err != nil {
		return nil, err
	}
	return a2av0.ToV1SubscribeToTaskRequest(&q), nil
}

// CreatePushConfig decodes tasks/pushNotificationConfig/set params.
func CreatePushConfig(p json.RawMessage) (*a2av1.PushConfig, error) {
	var c a2alegacy.TaskPushConfig
	if err := decode(p, &c); err != nil {
		return nil, err
	}
	return a2av0.ToV1PushConfig(&c), nil
}

// GetPushConfig decodes tasks/pushNotificationConfig/get params. Its ID is
// empty when the client left it out (v0.3 allows that for a task with one
// config).
func GetPushConfig(p json.RawMessage) (*a2av1.GetTaskPushConfigRequest, error) {
	var q a2alegacy.GetTaskPushConfigParams
	if err := decode(p, &q); err != nil {
		return nil, err
	}
	return a2av0.ToV1GetTaskPushConfigRequest(&q), nil
}

// ListPushConfigs decodes tasks/pushNotificationConfig/list params.
func ListPushConfigs(p json.RawMessage) (*a2av1.ListTaskPushConfigRequest, error) {
	var q a2alegacy.ListTaskPushConfigParams
	if err := decode(p, &q); err != nil {
		return nil, err
	}
	return a2av0.ToV1ListTaskPushConfigRequest(&q), nil
}

// DeletePushConfig decodes tasks/pushNotificationConfig/delete params.
func DeletePushConfig(p json.RawMessage) (*a2av1.DeleteTaskPushConfigRequest, error) {
	var q a2alegacy.DeleteTaskPushConfigParams
	if err := decode(p, &q); err != nil {
		return nil, err
	}
	return a2av0.ToV1DeleteTaskPushConfigRequest(&q), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
