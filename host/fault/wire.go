package fault

import (
	"encoding/json"
	"strings"
)

// Decode turns a JSON-RPC error as received on the wire back into an
// *Error: the Kind comes from the code (KindOfCode; an unknown code becomes
// Internal with data "code"), the Reason from the data's reason (an object's
// "reason", or the first google.rpc.ErrorInfo's, lower-cased), and Data
// holds the other data members. The reason is taken as sent: check it with
// Declared before passing it on.
func Decode(code int, message string, data json.RawMessage) *Error {
	kind, known := KindOfCode(code)
	fe := &Error{Kind: kind, Msg: message}
	var obj map[string]any
	var infos []struct {
		Reason   string            `json:"reason"`
		Metadata map[string]string `json:"metadata"`
	}
	switch {
	case json.Unmarshal(data, &obj) == nil && obj != nil:
		if r, ok := obj["reason"].(string); ok {
			fe.Reason = r
			delete(obj, "reason")
		}
		fe.Data = obj
	case json.Unmarshal(data, &infos) == nil && len(infos) > 0:
		fe.Reason = strings.ToLower(infos[0].Reason)
		if len(infos[0].Metadata) > 0 {
			fe.Data = map[string]any{}
			for k, v := range infos[0].Metadata {
				fe.Data[k] = v
			}
		}
	}
	if !known {
		fe = fe.With("code", code)
	}
	return fe
}
