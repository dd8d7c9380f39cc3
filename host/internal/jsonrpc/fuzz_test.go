package jsonrpc

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	`{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":12345678901234567890}`,
	`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":1,"subtrahend":2,"version":"2"},"id":1.0}`,
	`{"jsonrpc":"2.0","method":"update","id":1,"id":2}`,
	`[{"jsonrpc":"2.0","method":"notify_hello"},{"jsonrpc":"2.0","method":"get_data","id":null}]`,
	`[[]]`, `[{}]`, `{"jsonrpc":"2.0","method":"x","params":{"session_id":1}}`, "\x00", ``,
}

func addSeeds(f *testing.F) {
	for _, g := range mustReadGoldens(f) {
		f.Add(g.request)
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
}

// isNotification reports whether raw is a request that must get no response:
// a valid notification, or a non-empty batch of valid notifications.
func isNotification(raw []byte) bool {
	if kindOf(raw) == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil || len(elems) == 0 {
			return false
		}
		for _, e := range elems {
			if req, _, err := decodeRequest(e); err != nil || req.ID != nil {
				return false
			}
		}
		return true
	}
	req, _, err := decodeRequest(raw)
	return err == nil && req.ID == nil
}

func FuzzHandle(f *testing.F) {
	addSeeds(f)
	e := specEngine(f, nil, withMaxBody(64<<10))
	f.Fuzz(func(t *testing.T, body []byte) {
		reply := e.Handle(t.Context(), body)
		if reply.Streaming() {
			t.Fatal("spec engine never streams")
		}
		if reply.Body == nil {
			if !json.Valid(body) || !isNotification(body) {
				t.Fatalf("no response for a non-notification: %q", body)
			}
			return
		}
		if !json.Valid(reply.Body) {
			t.Fatalf("invalid JSON response %q for %q", reply.Body, body)
		}
		var objs []map[string]json.RawMessage
		if kindOf(reply.Body) == '[' {
			if err := json.Unmarshal(reply.Body, &objs); err != nil || len(objs) == 0 {
				t.Fatalf("bad batch response %q: %v", reply.Body, err)
			}
		} else {
			var o map[string]json.RawMessage
			if err := json.Unmarshal(reply.Body, &o); err != nil {
				t.Fatalf("response not an object %q: %v", reply.Body, err)
			}
			objs = append(objs, o)
		}
		for _, o := range objs {
			_, hasResult := o["result"]
			_, hasError := o["error"]
			_, hasID := o["id"]
			if string(o["jsonrpc"]) != `"2.0"` || hasResult == hasError || !hasID {
				t.Fatalf("malformed response object %q", reply.Body)
			}
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // Handle answers -32700 before decoding
		}
		req, echo, ferr := decodeRequest(raw)
		if ferr != nil {
			if req != nil {
				t.Fatal("request returned with an error")
			}
			if echo != nil && !json.Valid(echo) {
				t.Fatalf("echoed id %q is not JSON", echo)
			}
			return
		}
		if req.Method == "" {
			t.Fatal("empty method accepted")
		}
		if req.ID != nil {
			if k := kindOf(req.ID); k != '"' && k != '0' && k != 'n' {
				t.Fatalf("id %q accepted", req.ID)
			}
		}
		if k := kindOf(req.Params); req.Params != nil && k != '{' && k != '[' {
			t.Fatalf("params %q accepted", req.Params)
		}
		if out := EncodeResult(req.ID, req.Params); !json.Valid(out) {
			t.Fatalf("response for accepted request is not JSON: %q", out)
		}
		_, _ = readEnvelope(req, AcceptVersion1)
		var v map[string]any
		_ = req.Bind(&v)
	})
}

// refHasDuplicates is a slow reference for the duplicate-name check of the
// engine's strict read, built on json.Decoder tokens.
func refHasDuplicates(raw []byte) bool {
	type frame struct {
		object, expectKey bool
		keys              map[string]bool
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if s, ok := tok.(string); ok && top != nil && top.object && top.expectKey {
			if top.keys[s] {
				return true
			}
			top.keys[s], top.expectKey = true, false
			continue
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object {
			top.expectKey = true
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, &frame{object: d == '{', expectKey: d == '{', keys: map[string]bool{}})
		}
	}
}

func FuzzCheckDuplicates(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"a":{"b":[{"c":1,"\u0063":2}]},"d":"\"a\""}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		_, _, ferr := decodeRequest(raw)
		got := ferr != nil && strings.HasPrefix(ferr.Msg, "duplicate member ")
		if want := refHasDuplicates(raw); got != want {
			t.Fatalf("decodeRequest(%q) found duplicates = %v (%v), reference says %v", raw, got, ferr, want)
		}
	})
}

// refMembers is a slow reference for objectMembers built on json.Decoder:
// each member's name and its value, compacted.
func refMembers(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return out
		}
		var c bytes.Buffer
		_ = json.Compact(&c, val)
		out = append(out, tok.(string)+"="+c.String())
	}
	return out
}

// objectMembers finds exactly the members encoding/json finds, names
// decoded the same way, in any valid JSON object.
func FuzzObjectMembers(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(` { "a" : [1, {"b":"}"}] , "\u0061\"x" :"\\\"", "n":-1.5e3,"t":true, "z":null , "e":{} } `))
	f.Add([]byte(`{"\xff":1,"\ud800":2}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) || kindOf(raw) != '{' {
			return
		}
		var got []string
		_ = objectMembers(raw, func(name string, val json.RawMessage) error {
			var c bytes.Buffer
			if err := json.Compact(&c, val); err != nil {
				t.Fatalf("member %q: value %q is not JSON", name, val)
			}
			got = append(got, name+"="+c.String())
			return nil
		})
		if want := refMembers(raw); !slices.Equal(got, want) {
			t.Fatalf("objectMembers(%q) = %q, want %q", raw, got, want)
		}
	})
}
