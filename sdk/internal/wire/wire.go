package wire

import "encoding/json"

// Host function names in the "extism:host/user" namespace.
const (
	FnLog        = "log"
	FnProgress   = "progress"
	FnContextGet = "context_get"
	FnContextSet = "context_set"
	FnHTTPFetch  = "http_fetch"
)

// Reply is the envelope every host function answers with:
// {"ok":true,"result":…} or {"ok":false,"error":{"code":…,"message":…}}.
type Reply struct {
	OK     bool        `json:"ok"`
	Result any         `json:"result,omitempty"`
	Error  *ReplyError `json:"error,omitempty"`
}

// ReplyError is a host-reported failure.
type ReplyError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// LogRequest is the request of log.
type LogRequest struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// ProgressRequest is the request of progress.
type ProgressRequest struct {
	Percent float64         `json:"percent"`
	Message string          `json:"message,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ContextGetRequest is the request of context_get.
type ContextGetRequest struct {
	Key string `json:"key"`
}

// ContextGetResult is the result of context_get.
type ContextGetResult struct {
	Found bool            `json:"found"`
	Value json.RawMessage `json:"value,omitempty"`
}

// ContextSetRequest is the request of context_set.
type ContextSetRequest struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
	TTLMs int64           `json:"ttl_ms,omitempty"`
}

// FnAgentCall is the host function that calls another agent.
const FnAgentCall = "agent_call"

// AgentCallRequest is the request of agent_call.
type AgentCallRequest struct {
	Agent     string          `json:"agent"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params,omitempty"`
	TimeoutMs int64           `json:"timeout_ms,omitempty"`
}

// AgentCallResult is the result of agent_call.
type AgentCallResult struct {
	AgentID         string          `json:"agent_id"`
	Method          string          `json:"method"`
	Result          json.RawMessage `json:"result"`
	ExecutionTimeMS int64           `json:"execution_time_ms"`
	FallbackFrom    string          `json:"fallback_from,omitempty"`
}

// Task host functions: the A2A task a call runs a turn of.
const (
	FnTaskHistory   = "task_history"
	FnTaskInterrupt = "task_interrupt"
)

// TaskMessage is one message of a task's history.
type TaskMessage struct {
	Role string          `json:"role"`
	Text string          `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// TaskHistoryRequest is the request of task_history.
type TaskHistoryRequest struct {
	Limit int `json:"limit,omitempty"`
}

// TaskHistoryResult is the result of task_history.
type TaskHistoryResult struct {
	TaskID    string        `json:"task_id"`
	Turn      int           `json:"turn"`
	Messages  []TaskMessage `json:"messages"`
	Truncated bool          `json:"truncated"`
}

// TaskInterruptRequest is the request of task_interrupt.
type TaskInterruptRequest struct {
	State string          `json:"state"`
	Text  string          `json:"text"`
	Data  json.RawMessage `json:"data,omitempty"`
}
