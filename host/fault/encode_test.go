package fault_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
)

var wireMeta = fault.Meta{RequestID: "req_1", SessionID: "sess_1", Time: time.Date(2025, 6, 1, 10, 30, 0, 0, time.UTC)}

const wireTime = "2025-06-01T10:30:00.000Z"

func mustDecodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

// TestWireShapesEveryKind encodes an error of every kind, without a reason
// and with each reason declared for it, in every wire shape, and checks
// what a client reads: the code, a reason that is never empty, the A2A
// reason and domain of the ErrorInfo, the HTTP status and gRPC name of the
// google.rpc.Status, the summary, and that Decode gives the kind and
// reason back.
func TestWireShapesEveryKind(t *testing.T) {
	t.Parallel()
	for _, k := range fault.Kinds() {
		for _, reason := range append([]string{""}, fault.ReasonsOf(k)...) {
			fe := fault.New(k, reason, "detail").With("skill_id", "echo").With("limit", 3)
			want := fe.WireReason()
			if want == "" {
				t.Fatalf("%v/%q: empty wire reason", k, reason)
			}
			name := k.String() + "/" + want
			for _, style := range []fault.DataStyle{fault.DataAuto, fault.DataInfo, fault.DataObject} {
				body := fe.MarshalRPC(wireMeta, style)
				var got struct {
					Code    int             `json:"code"`
					Message string          `json:"message"`
					Data    json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("%s: MarshalRPC is not JSON: %v", name, err)
				}
				if got.Code != k.Code() || got.Message != "detail" {
					t.Errorf("%s: code %d message %q", name, got.Code, got.Message)
				}
				info := style == fault.DataInfo || (style == fault.DataAuto && k.IsA2A())
				if info {
					var infos []map[string]any
					if err := json.Unmarshal(got.Data, &infos); err != nil || len(infos) != 1 {
						t.Fatalf("%s style %d: data %s, want one ErrorInfo", name, style, got.Data)
					}
					if diff := cmp.Diff(mustDecodeJSON(t, mustMarshal(t, fe.Info(wireMeta))), infos[0]); diff != "" {
						t.Errorf("%s: ErrorInfo in data differs from Info (-Info +data):\n%s", name, diff)
					}
				} else {
					data := mustDecodeJSON(t, got.Data)
					wantData := map[string]any{"reason": want, "request_id": "req_1", "timestamp": wireTime,
						"session_id": "sess_1", "skill_id": "echo", "limit": 3.0}
					if diff := cmp.Diff(wantData, data); diff != "" {
						t.Errorf("%s: data object (-want +got):\n%s", name, diff)
					}
				}
				back := fault.Decode(got.Code, got.Message, got.Data)
				if back.Kind != k || back.Reason != want || back.Data["skill_id"] != "echo" {
					t.Errorf("%s style %d: Decode = %v/%q %v, want %v/%q", name, style, back.Kind, back.Reason, back.Data, k, want)
				}
			}

			info := fe.Info(wireMeta)
			wantInfo := map[string]any{"@type": fault.ErrorInfoType, "reason": k.A2AReason(), "domain": fault.Domain,
				"metadata": map[string]string{"reason": want, "request_id": "req_1", "timestamp": wireTime,
					"session_id": "sess_1", "skill_id": "echo", "limit": "3"}}
			if diff := cmp.Diff(wantInfo, info); diff != "" {
				t.Errorf("%s: Info (-want +got):\n%s", name, diff)
			}
			if k.A2AReason() == "" {
				t.Errorf("%s: no A2A reason", name)
			}

			status := mustDecodeJSON(t, fe.MarshalStatus(wireMeta))
			wantStatus := map[string]any{"error": map[string]any{"code": float64(fe.HTTPStatus()), "status": fe.GRPCStatus(),
				"message": "detail", "details": []any{mustDecodeJSON(t, mustMarshal(t, info))}}}
			if diff := cmp.Diff(wantStatus, status); diff != "" {
				t.Errorf("%s: google.rpc.Status (-want +got):\n%s", name, diff)
			}
			if s := fe.HTTPStatus(); s < 400 || s > 599 || fe.GRPCStatus() == "" {
				t.Errorf("%s: HTTP %d, gRPC %q", name, s, fe.GRPCStatus())
			}
			if rs := fe.RPCStatus(); (fe.Refusal() && rs != fe.HTTPStatus()) || (!fe.Refusal() && rs != http.StatusOK) {
				t.Errorf("%s: RPCStatus %d (refusal %v, HTTP %d)", name, rs, fe.Refusal(), fe.HTTPStatus())
			}

			wantSum := fault.Summary{Code: k.Code(), Reason: want, Kind: k.String(), Message: "detail"}
			if diff := cmp.Diff(wantSum, fe.Summary()); diff != "" {
				t.Errorf("%s: Summary (-want +got):\n%s", name, diff)
			}
			if diff := cmp.Diff(map[string]any{"code": k.Code(), "reason": want, "kind": k.String(), "message": "detail"}, fe.Summary().Map()); diff != "" {
				t.Errorf("%s: Summary.Map (-want +got):\n%s", name, diff)
			}
		}
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestWireShapesExact pins the bytes of the shapes for a few errors a client
// meets: an A2A error, an unknown skill (the same ErrorInfo over JSON-RPC
// and REST), a timeout (skillhost's own kind: SERVER_ERROR), the store down
// (503) and a key over its share (a refusal: 429 even over JSON-RPC).
func TestWireShapesExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        *fault.Error
		style      fault.DataStyle
		wantRPC    string
		wantStatus string
		wantHTTP   int
		wantRPCSt  int
	}{
		{"task not found", fault.New(fault.TaskNotFound, fault.ReasonTaskNotFound, "task t1 not found"), fault.DataAuto,
			`{"code":-32001,"message":"task t1 not found","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"task_not_found","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"TASK_NOT_FOUND"}]}`,
			`{"error":{"code":404,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"task_not_found","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"TASK_NOT_FOUND"}],"message":"task t1 not found","status":"NOT_FOUND"}}`,
			404, 200},
		{"unknown skill, A2A v1.0 method", fault.New(fault.InvalidParams, fault.ReasonUnknownSkill, "unknown skill"), fault.DataInfo,
			`{"code":-32602,"message":"unknown skill","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"unknown_skill","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"INVALID_PARAMS"}]}`,
			`{"error":{"code":400,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"unknown_skill","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"INVALID_PARAMS"}],"message":"unknown skill","status":"INVALID_ARGUMENT"}}`,
			400, 200},
		{"timeout, dialect method", fault.New(fault.Timeout, fault.ReasonTimeout, "too slow"), fault.DataAuto,
			`{"code":-32104,"message":"too slow","data":{"reason":"timeout","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"}}`,
			`{"error":{"code":504,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"timeout","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"SERVER_ERROR"}],"message":"too slow","status":"DEADLINE_EXCEEDED"}}`,
			504, 200},
		{"store unavailable", fault.New(fault.Internal, fault.ReasonStoreUnavailable, "retry"), fault.DataObject,
			`{"code":-32603,"message":"retry","data":{"reason":"store_unavailable","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"}}`,
			`{"error":{"code":503,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"store_unavailable","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"INTERNAL_ERROR"}],"message":"retry","status":"UNAVAILABLE"}}`,
			503, 200},
		{"key over its share", fault.New(fault.ResourceExhausted, fault.ReasonKeyQuota, "share used").With("session_id", "sess_2"), fault.DataAuto,
			`{"code":-32106,"message":"share used","data":{"reason":"key_quota","request_id":"req_1","session_id":"sess_2","timestamp":"2025-06-01T10:30:00.000Z"}}`,
			`{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"key_quota","request_id":"req_1","session_id":"sess_2","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"SERVER_ERROR"}],"message":"share used","status":"RESOURCE_EXHAUSTED"}}`,
			429, 429},
		{"host full", fault.New(fault.ResourceExhausted, fault.ReasonResourceExhausted, "full"), fault.DataAuto,
			`{"code":-32106,"message":"full","data":{"reason":"resource_exhausted","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"}}`,
			`{"error":{"code":503,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"resource_exhausted","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"SERVER_ERROR"}],"message":"full","status":"UNAVAILABLE"}}`,
			503, 200},
		{"scope denied", fault.New(fault.Forbidden, fault.ReasonScopeDenied, "no"), fault.DataInfo,
			`{"code":-32105,"message":"no","data":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"scope_denied","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"UNAUTHORIZED"}]}`,
			`{"error":{"code":403,"details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","domain":"a2a-protocol.org","metadata":{"reason":"scope_denied","request_id":"req_1","session_id":"sess_1","timestamp":"2025-06-01T10:30:00.000Z"},"reason":"UNAUTHORIZED"}],"message":"no","status":"PERMISSION_DENIED"}}`,
			403, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(mustDecodeJSON(t, []byte(tt.wantRPC)), mustDecodeJSON(t, tt.err.MarshalRPC(wireMeta, tt.style))); diff != "" {
				t.Errorf("MarshalRPC (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(mustDecodeJSON(t, []byte(tt.wantStatus)), mustDecodeJSON(t, tt.err.MarshalStatus(wireMeta))); diff != "" {
				t.Errorf("MarshalStatus (-want +got):\n%s", diff)
			}
			if tt.err.HTTPStatus() != tt.wantHTTP || tt.err.RPCStatus() != tt.wantRPCSt {
				t.Errorf("HTTP %d, JSON-RPC over HTTP %d; want %d, %d", tt.err.HTTPStatus(), tt.err.RPCStatus(), tt.wantHTTP, tt.wantRPCSt)
			}
		})
	}
}

// TestMarshalRPCUnencodableData: data that cannot be encoded is dropped, the
// reason and the request stay.
func TestMarshalRPCUnencodableData(t *testing.T) {
	t.Parallel()
	fe := fault.New(fault.SkillFailed, fault.ReasonTrap, "trap").With("ch", make(chan int))
	got := mustDecodeJSON(t, fe.MarshalRPC(wireMeta, fault.DataObject))
	want := map[string]any{"code": -32103.0, "message": "trap", "data": map[string]any{
		"reason": "trap", "request_id": "req_1", "session_id": "sess_1", "timestamp": wireTime}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestDecodeOtherServers: an A2A server that is not skillhost (no
// metadata.reason) and a skillhost before metadata.reason (domain
// skillhost, its reason upper-cased) are decoded too; -32105 with a
// Forbidden reason is Forbidden.
func TestDecodeOtherServers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		code       int
		data       string
		wantKind   fault.Kind
		wantReason string
	}{
		{"a2a-go server", -32001, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_FOUND","domain":"a2a-protocol.org","metadata":{"timestamp":"x"}}]`, fault.TaskNotFound, "task_not_found"},
		{"older skillhost", -32602, `[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"UNKNOWN_SKILL","domain":"skillhost"}]`, fault.InvalidParams, "unknown_skill"},
		{"forbidden by its reason", -32105, `{"reason":"scope_denied"}`, fault.Forbidden, "scope_denied"},
		{"forbidden by its A2A reason", -32105, `[{"reason":"UNAUTHORIZED","domain":"a2a-protocol.org"}]`, fault.Forbidden, "unauthorized"},
		{"unauthorized", -32105, `{"reason":"invalid_credentials"}`, fault.Unauthorized, "invalid_credentials"},
		{"no data", -32104, ``, fault.Timeout, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := fault.Decode(tt.code, "m", json.RawMessage(tt.data))
			if got.Kind != tt.wantKind || got.Reason != tt.wantReason {
				t.Errorf("Decode = %v/%q, want %v/%q", got.Kind, got.Reason, tt.wantKind, tt.wantReason)
			}
			if _, ok := got.Data["reason"]; ok {
				t.Errorf("the reason is left in Data: %v", got.Data)
			}
		})
	}
}
