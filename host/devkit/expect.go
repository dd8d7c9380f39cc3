package devkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/hostfn"
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

// checkAsk checks a turn that returned: it asked for input as st.Asks
// expects (a question containing it), or it did not and its output is
// checked as a plain example's.
func checkAsk(st plugin.Turn, ask *hostfn.Interrupt, output json.RawMessage) string {
	switch {
	case st.Asks != nil && ask == nil:
		return fmt.Sprintf("returned %s, want it to ask for input (a question containing %q)", clip(string(output)), *st.Asks)
	case st.Asks != nil && !strings.Contains(ask.Text, *st.Asks):
		return fmt.Sprintf("asked %q, want a question containing %q", clip(ask.Text), *st.Asks)
	case st.Asks == nil && ask != nil:
		return fmt.Sprintf("asked for input (%s: %q); a multi-turn example says so with asks and answers with turns", ask.State, clip(ask.Text))
	case st.Asks != nil:
		return ""
	}
	return check(plugin.Example{Output: st.Output, Error: st.Error}, output, nil)
}

// firstMessage is an example's input as the first message of its task's
// history: {"text": …} alone as a text message, anything else as data.
func firstMessage(input json.RawMessage) hostfn.Message {
	var t map[string]json.RawMessage
	var text string
	if json.Unmarshal(input, &t) == nil && len(t) == 1 && json.Unmarshal(t["text"], &text) == nil {
		return hostfn.Message{Role: "user", Text: text}
	}
	return hostfn.Message{Role: "user", Data: input}
}

// reply is a turn's follow-up as the skill's input and as a history
// message: a JSON string is text ({"text": …}), anything else data.
func reply(v json.RawMessage) (json.RawMessage, hostfn.Message) {
	var text string
	if json.Unmarshal(v, &text) == nil {
		in, _ := json.Marshal(map[string]string{"text": text}) // strings always encode
		return in, hostfn.Message{Role: "user", Text: text}
	}
	return v, hostfn.Message{Role: "user", Data: v}
}
