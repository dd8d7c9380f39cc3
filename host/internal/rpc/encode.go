package rpc

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// encodeExecuteResult encodes skill/execute's result (skillExecuteResult)
// in one pass over the plugin's output: json.Compact checks that it is JSON
// and compacts it into the response in the same pass (json.Marshal of a
// json.RawMessage would check it, then compact it again). The bytes are
// those json.Marshal writes: HTML characters escaped, output that is not
// JSON as a string, empty output as null.
func encodeExecuteResult(out *plugin.Outcome) jsonrpc.Encoded {
	return appendExecuteResult(make([]byte, 0, executeResultSize(out)), out)
}

// executeResultSize is about the length of out's encoded result.
func executeResultSize(out *plugin.Outcome) int {
	return len(out.Output) + len(out.SkillID) + len(out.Plugin) + len(out.Version) + 200
}

// appendExecuteResult appends out's encoded result to dst
// (encodeExecuteResult).
func appendExecuteResult(dst []byte, out *plugin.Outcome) []byte {
	b := bytes.NewBuffer(dst)
	b.WriteString(`{"skill_id":`)
	appendString(b, out.SkillID)
	b.WriteString(`,"status":"success","output":`)
	appendOutput(b, out.Output)
	b.WriteString(`,"execution_time_ms":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), out.Duration.Milliseconds(), 10))
	a := accounting(out)
	b.WriteString(`,"accounting":{"plugin":`)
	appendString(b, a.Plugin)
	b.WriteString(`,"plugin_version":`)
	appendString(b, a.PluginVersion)
	b.WriteString(`,"duration_us":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), a.DurationMicros, 10))
	b.WriteString(`,"memory_peak_bytes":`)
	b.Write(strconv.AppendUint(b.AvailableBuffer(), a.MemoryPeakBytes, 10))
	b.WriteString(`,"instance":`)
	appendString(b, a.Instance)
	b.WriteString(`}}`)
	return b.Bytes()
}

// appendOutput writes a plugin's output as OutputValue's value encodes.
func appendOutput(b *bytes.Buffer, out []byte) {
	if len(out) == 0 {
		b.WriteString("null")
		return
	}
	start := b.Len()
	if err := json.Compact(b, out); err != nil { // not JSON: a string
		s, _ := json.Marshal(string(out))
		b.Write(s)
		return
	}
	if c := b.Bytes()[start:]; bytes.ContainsAny(c, "<>&\u2028\u2029") {
		esc := bytes.NewBuffer(make([]byte, 0, len(c)+32))
		json.HTMLEscape(esc, c)
		b.Truncate(start)
		b.Write(esc.Bytes())
	}
}

// appendString writes s as json.Marshal does, without its allocations for
// the plain ASCII of ids, names and versions.
func appendString(b *bytes.Buffer, s string) {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			b.Write(q)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}
