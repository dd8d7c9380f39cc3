package devkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// callerOutput is a plugin's output as a caller receives it (skill/execute
// "output", agent/call "result"): the JSON as is (compacted), null for an
// empty output, and a JSON string for output that is not JSON.
func callerOutput(out []byte) json.RawMessage {
	if len(bytes.TrimSpace(out)) == 0 {
		return json.RawMessage("null")
	}
	var b bytes.Buffer
	if json.Compact(&b, out) == nil {
		return b.Bytes()
	}
	s, _ := json.Marshal(string(out)) // strings always encode
	return s
}

// check compares a call's outcome with an example's expectation and says
// what differs ("" = the example passes). Exactly one of output and fe is
// set.
func check(ex plugin.Example, output json.RawMessage, fe *fault.Error) string {
	if fe != nil {
		if ex.Error == nil {
			return fe.Message()
		}
		if miss := errorMismatch(ex.Error, fe); miss != "" {
			return fmt.Sprintf("failed with %s (%s), want %s", describeFault(fe), fe.Message(), miss)
		}
		return ""
	}
	if ex.Error != nil {
		return fmt.Sprintf("succeeded with output %s, want an error%s", clip(string(output)), describeExpected(ex.Error))
	}
	if ex.Output != nil && !jsonEqual(ex.Output, output) {
		return fmt.Sprintf("output %s, want %s", clip(string(output)), clip(string(ex.Output)))
	}
	return ""
}

// errorMismatch names the expected parts fe does not have ("" = matches).
func errorMismatch(want *plugin.ExpectedError, fe *fault.Error) string {
	var miss []string
	if want.Reason != "" && want.Reason != fe.Reason {
		miss = append(miss, "reason "+want.Reason)
	}
	if want.RPCCode != 0 && want.RPCCode != fe.Kind.Code() {
		miss = append(miss, fmt.Sprintf("code %d", want.RPCCode))
	}
	if want.Code != "" && want.Code != pluginCode(fe) {
		miss = append(miss, "code "+want.Code)
	}
	return strings.Join(miss, ", ")
}

// pluginCode is the plugin's own error code carried by a plugin_error.
func pluginCode(fe *fault.Error) string {
	s, _ := fe.Data["plugin_code"].(string)
	return s
}

func describeFault(fe *fault.Error) string {
	s := fmt.Sprintf("reason %s, code %d", fe.Reason, fe.Kind.Code())
	if c := pluginCode(fe); c != "" {
		s += ", plugin code " + c
	}
	return s
}

func describeExpected(e *plugin.ExpectedError) string {
	var parts []string
	if e.Reason != "" {
		parts = append(parts, "reason "+e.Reason)
	}
	if e.RPCCode != 0 {
		parts = append(parts, fmt.Sprintf("code %d", e.RPCCode))
	}
	if e.Code != "" {
		parts = append(parts, "code "+e.Code)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// jsonEqual compares two JSON documents as values: key order, spacing and
// number spelling (1, 1.0, 1e0) do not matter.
func jsonEqual(a, b json.RawMessage) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}
