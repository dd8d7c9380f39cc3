package sdk

import (
	"encoding/json"
	"testing"
)

// recorder is an in-memory host: it records what the SDK hands over and
// answers host calls with canned reply envelopes.
type recorder struct {
	in      []byte
	out     []byte
	errJSON []byte
	cfg     map[string]string
	calls   []hostCall
	reply   func(fn string, req []byte) []byte
}

type hostCall struct {
	Fn  string
	Req string
}

func (r *recorder) input() []byte                    { return r.in }
func (r *recorder) output(b []byte)                  { r.out = b }
func (r *recorder) setError(b []byte)                { r.errJSON = b }
func (r *recorder) Config(key string) (string, bool) { v, ok := r.cfg[key]; return v, ok }
func (r *recorder) Call(fn string, req []byte) []byte {
	r.calls = append(r.calls, hostCall{fn, string(req)})
	if r.reply == nil {
		return []byte(`{"ok":true,"result":{}}`)
	}
	return r.reply(fn, req)
}

// okReply returns a reply function answering every call with result.
func okReply(t *testing.T, result any) func(string, []byte) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"ok": true, "result": result})
	if err != nil {
		t.Fatal(err)
	}
	return func(string, []byte) []byte { return b }
}

// mustContext returns a Context over a recorder.
func mustContext(t *testing.T, reply func(string, []byte) []byte) (*Context, *recorder) {
	t.Helper()
	r := &recorder{reply: reply}
	return NewContext(r), r
}
