package rpc

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/plugin"
)

// TestEncodeExecuteResultMatchesMarshal: skill/execute's result, encoded in
// one pass, is byte for byte what json.Marshal wrote of it before.
func TestEncodeExecuteResultMatchesMarshal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		output string
		fresh  bool
	}{
		{"object", `{"text":"hello","n":12345}`, false},
		{"spaced JSON is compacted", " {\n  \"a\" : [1, 2,\t3] }\n", true},
		{"HTML characters are escaped", `{"html":"<b>&amp;</b>"}`, false},
		{"line separators are escaped", "[\"a\u2028b\u2029c\"]", false},
		{"escapes are kept", `"\u0041\n\/"`, false},
		{"not JSON is a string", `plain text <b>`, false},
		{"invalid UTF-8 text", "caf\xe9 \x00", false},
		{"invalid UTF-8 in a JSON string", "\"caf\xe9\"", false},
		{"truncated JSON is a string", `{"a":`, false},
		{"empty is null", ``, false},
		{"number", `-1.5e3`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := &plugin.Outcome{SkillID: "echo", Plugin: "echo-plugin", Version: "1.2.3-rc.1", Output: []byte(tt.output),
				Duration: 1234567 * time.Microsecond, MemoryPeakBytes: 1 << 20, Fresh: tt.fresh}
			want, err := json.Marshal(skillExecuteResult{SkillID: out.SkillID, Status: "success", Output: OutputValue(out.Output),
				ExecutionTimeMS: out.Duration.Milliseconds(), Accounting: accounting(out)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(encodeExecuteResult(out))); diff != "" {
				t.Errorf("encoded result (-json.Marshal +one pass):\n%s", diff)
			}
		})
	}
}

// TestAppendStringMatchesMarshal: ids and names are quoted as json.Marshal
// quotes them, whatever they hold.
func TestAppendStringMatchesMarshal(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "echo", "a\"b", `a\b`, "<&>", "tab\there", "é", "\xff", "\u2028"} {
		want, _ := json.Marshal(s)
		out := encodeExecuteResult(&plugin.Outcome{SkillID: s, Plugin: s, Version: s})
		var got skillExecuteResult
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q: %v in %s", s, err, out)
		}
		if w, _ := json.Marshal(skillExecuteResult{SkillID: s, Status: "success", Accounting: Accounting{Plugin: s, PluginVersion: s, Instance: "reused"}}); string(w) != string(out) {
			t.Errorf("%q (json.Marshal %s): got %s, want %s", s, want, out, w)
		}
	}
}

func BenchmarkEncodeExecuteResult(b *testing.B) {
	out := &plugin.Outcome{SkillID: "echo", Plugin: "echo", Version: "1.0.0", Output: []byte(`{"text":"hello, benchmark","n":12345}`),
		Duration: 30 * time.Microsecond, MemoryPeakBytes: 1 << 20}
	b.Run("marshal", func(b *testing.B) { // what skill/execute did before
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(skillExecuteResult{SkillID: out.SkillID, Status: "success", Output: OutputValue(out.Output),
				ExecutionTimeMS: out.Duration.Milliseconds(), Accounting: accounting(out)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = encodeExecuteResult(out)
		}
	})
}
