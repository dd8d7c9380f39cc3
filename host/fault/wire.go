package fault

import (
	"encoding/json"
	"strings"
)

// Decode turns a JSON-RPC error as received on the wire back into an
// *Error: the Kind comes from the code (KindOfCode; an unknown code becomes
// Internal with data "code"), the Reason from the data — an object's
// "reason", or the first google.rpc.ErrorInfo's metadata "reason" (what
// MarshalRPC sends), else that ErrorInfo's own reason lower-cased (another
// A2A server's, or a skillhost before metadata.reason) — and Data holds the
// other data members. -32105 is Forbidden when the reason says so (a
// Forbidden reason, or the ErrorInfo reason of Forbidden). The reason is
// taken as sent: check it with Declared before passing it on.
func Decode(code int, message string, data json.RawMessage) *Error {
	kind, known := KindOfCode(code)
	fe := &Error{Kind: kind, Msg: message}
	var obj map[string]any
	var infos []struct {
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	}
	a2aReason := ""
	switch {
	case json.Unmarshal(data, &obj) == nil && obj != nil:
		if r, ok := obj["reason"].(string); ok {
			fe.Reason = r
			delete(obj, "reason")
		}
		fe.Data = obj
	case json.Unmarshal(data, &infos) == nil && len(infos) > 0:
		a2aReason = infos[0].Reason
		fe.Reason = strings.ToLower(a2aReason)
		if r, ok := infos[0].Metadata["reason"]; ok {
			fe.Reason = r
		}
		for k, v := range infos[0].Metadata {
			if k == "reason" {
				continue
			}
			if fe.Data == nil {
				fe.Data = map[string]any{}
			}
			fe.Data[k] = v
		}
	}
	if kind == Unauthorized && (Declared(fe.Reason, Forbidden) || (a2aReason != "" && a2aReason == Forbidden.A2AReason())) {
		fe.Kind = Forbidden
	}
	if !known {
		fe = fe.With("code", code)
	}
	return fe
}
