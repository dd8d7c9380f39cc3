package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/skillhost/skillhost/host/fault"
)

// The body is read by a strict tokenizer (jsontext, the tokenizer of Go's
// encoding/json/v2) in one pass: it checks the syntax, refuses an object
// naming a member twice at any depth ("a" and "\u0061" are the same name),
// and yields the members the engine needs, the params' included, as
// slices of the body. Invalid UTF-8 inside strings is accepted (replaced by
// U+FFFD when a name is compared), as encoding/json accepts it.
var (
	// strictOpts read a request: duplicate names are errors.
	strictOpts = jsontext.AllowInvalidUTF8(true)
	// batchOpts split a batch: each element is then read strictly on its
	// own, so one element naming a member twice fails only itself.
	batchOpts = jsonv2.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
)

// reader is a pooled tokenizer over one body.
type reader struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

var readers = sync.Pool{New: func() any { return new(reader) }}

func getReader(body []byte, opts jsontext.Options) *reader {
	r := readers.Get().(*reader)
	r.buf = *bytes.NewBuffer(body) // the decoder reads the buffer in place: values are slices of body
	r.dec.Reset(&r.buf, opts)
	return r
}

func putReader(r *reader) {
	r.buf = bytes.Buffer{}
	r.dec.Reset(&r.buf)
	readers.Put(r)
}

// readValue reads the next value and returns it as a slice of body (valid
// as long as body is), not of the decoder's buffer.
func (r *reader) readValue(body []byte) (json.RawMessage, error) {
	v, err := r.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	end := int(r.dec.InputOffset())
	return body[end-len(v) : end : end], nil
}

// atEOF reports whether only whitespace follows the value read.
func (r *reader) atEOF() error {
	if _, err := r.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the top-level value")
		}
		return err
	}
	return nil
}

// syntaxFault classifies a tokenizer error: a repeated member name is an
// invalid request (the body is otherwise JSON), anything else a parse error.
func syntaxFault(body []byte, err error) *fault.Error {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) && errors.Is(se.Err, jsontext.ErrDuplicateName) && json.Valid(body) {
		dup := fmt.Errorf("duplicate member %q", se.JSONPointer.LastToken())
		return fault.Wrap(fault.InvalidRequest, fault.ReasonInvalidRequest, dup, dup.Error())
	}
	return fault.Wrap(fault.Parse, fault.ReasonParse, err, "body is not valid JSON")
}

// splitBatch returns the raw elements of a batch body (starting with '['),
// checking the whole body's syntax in the same pass and refusing more than
// max elements without keeping the rest.
func splitBatch(body []byte, max int) ([]json.RawMessage, *fault.Error) {
	r := getReader(body, batchOpts)
	defer putReader(r)
	if _, err := r.dec.ReadToken(); err != nil { // '['
		return nil, syntaxFault(body, err)
	}
	var elems []json.RawMessage
	over := false
	for r.dec.PeekKind() != ']' {
		if len(elems) == max {
			over = true
			if err := r.dec.SkipValue(); err != nil { // still checked: a parse error comes first
				return nil, syntaxFault(body, err)
			}
			continue
		}
		raw, err := r.readValue(body)
		if err != nil {
			return nil, syntaxFault(body, err)
		}
		elems = append(elems, raw)
	}
	if _, err := r.dec.ReadToken(); err != nil { // ']', or the error PeekKind saw
		return nil, syntaxFault(body, err)
	}
	if err := r.atEOF(); err != nil {
		return nil, syntaxFault(body, err)
	}
	switch {
	case over:
		return nil, fault.Newf(fault.InvalidRequest, fault.ReasonBatchTooLarge,
			"batch has more than %d requests; the limit is %d", max, max)
	case len(elems) == 0:
		return nil, fault.New(fault.InvalidRequest, fault.ReasonEmptyBatch, "empty batch")
	}
	return elems, nil
}

// member is one member of a params object: its name (decoded as
// encoding/json decodes names) and its value, a slice of the body.
type member struct {
	name  []byte
	value json.RawMessage
}

// decodeRequest reads one request object in a single strict pass (syntax,
// duplicate names, the members of the request and of its params object).
// On failure it returns the id to echo in the error response (nil = null):
// the request's id when it was itself valid, else null.
func decodeRequest(raw []byte) (*Request, json.RawMessage, *fault.Error) {
	return decodeRequestIn(raw, nil)
}

// decodeRequestIn is decodeRequest with the method name taken from
// intern when it knows the name (a registered method: no string made per
// request); intern may be nil.
func decodeRequestIn(raw []byte, intern func(name []byte) (string, bool)) (*Request, json.RawMessage, *fault.Error) {
	r := getReader(raw, strictOpts)
	defer putReader(r)
	req := &Request{}
	var id, version, method json.RawMessage // nil: absent
	if r.dec.PeekKind() != '{' {
		if _, err := r.dec.ReadValue(); err != nil {
			return nil, nil, syntaxFault(raw, err)
		}
		if err := r.atEOF(); err != nil {
			return nil, nil, syntaxFault(raw, err)
		}
		return nil, nil, invalid("request must be a JSON object")
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return nil, nil, syntaxFault(raw, err)
	}
	for r.dec.PeekKind() == '"' {
		lit, err := r.readValue(raw)
		if err != nil {
			return nil, nil, syntaxFault(raw, err)
		}
		name := nameOf(lit)
		switch string(name) {
		case "params":
			if r.dec.PeekKind() == '{' {
				err = readParams(r, raw, req)
			} else {
				req.Params, err = r.readValue(raw)
			}
		case "id":
			id, err = r.readValue(raw)
		case "jsonrpc":
			version, err = r.readValue(raw)
		case "method":
			method, err = r.readValue(raw)
		default:
			err = r.dec.SkipValue()
		}
		if err != nil {
			return nil, nil, syntaxFault(raw, err)
		}
	}
	if _, err := r.dec.ReadToken(); err != nil { // '}', or the error PeekKind saw
		return nil, nil, syntaxFault(raw, err)
	}
	if err := r.atEOF(); err != nil {
		return nil, nil, syntaxFault(raw, err)
	}

	var echo json.RawMessage
	if id != nil {
		switch kindOf(id) {
		case '"', '0', 'n':
			req.ID = id
			echo = id
		default:
			return nil, nil, invalid("id must be a string, a number or null")
		}
	}
	if version == nil || !isString(version, "2.0") {
		return nil, echo, invalid(`member "jsonrpc" must be exactly "2.0"`)
	}
	if method == nil || kindOf(method) != '"' {
		return nil, echo, invalid(`member "method" must be a string`)
	}
	var ok bool
	if intern != nil && len(method) >= 2 && method[0] == '"' && bytes.IndexByte(method, '\\') < 0 {
		req.Method, ok = intern(method[1 : len(method)-1])
	}
	if !ok {
		req.Method, ok = stringValue(method)
	}
	if !ok || req.Method == "" {
		return nil, echo, invalid(`member "method" must be a non-empty string`)
	}
	if req.Params != nil {
		if k := kindOf(req.Params); k != '{' && k != '[' {
			return nil, echo, invalid(`member "params" must be an object or an array`)
		}
	}
	return req, nil, nil
}

// readParams reads a params object member by member, keeping each member
// for the envelope reader and Bind, which then need not scan it again.
func readParams(r *reader, body []byte, req *Request) error {
	if _, err := r.dec.ReadToken(); err != nil { // '{'
		return err
	}
	start := int(r.dec.InputOffset()) - 1
	req.members = req.inline[:0]
	for r.dec.PeekKind() == '"' {
		lit, err := r.readValue(body)
		if err != nil {
			return err
		}
		val, err := r.readValue(body)
		if err != nil {
			return err
		}
		req.members = append(req.members, member{name: nameOf(lit), value: val})
	}
	if _, err := r.dec.ReadToken(); err != nil { // '}'
		return err
	}
	end := int(r.dec.InputOffset())
	req.Params = body[start:end:end]
	req.parsed = req.Params
	return nil
}

// nameOf decodes a member name literal (see memberName); it allocates only
// for a name with escapes or invalid UTF-8.
func nameOf(lit []byte) []byte {
	if len(lit) >= 2 && bytes.IndexByte(lit, '\\') < 0 && utf8Valid(lit) {
		return lit[1 : len(lit)-1]
	}
	s, err := memberName(lit)
	if err != nil {
		return nil
	}
	return []byte(s)
}

func invalid(msg string) *fault.Error {
	return fault.New(fault.InvalidRequest, fault.ReasonInvalidRequest, msg)
}

// kindOf classifies a raw JSON value by its first byte: '{', '[', '"',
// '0' (any number), 'n' (null), 'b' (boolean), or 0 for anything else.
func kindOf(raw []byte) byte {
	raw = trimSpace(raw)
	if len(raw) == 0 {
		return 0
	}
	switch c := raw[0]; {
	case c == '{' || c == '[' || c == '"' || c == 'n':
		return c
	case c == '-' || (c >= '0' && c <= '9'):
		return '0'
	case c == 't' || c == 'f':
		return 'b'
	}
	return 0
}

// trimSpace drops the JSON whitespace before a value (bytes.TrimLeft with
// a cutset costs more than the values it trims here).
func trimSpace(raw []byte) []byte {
	i := 0
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return raw[i:]
}

func isString(raw []byte, want string) bool {
	s, ok := stringValue(raw)
	return ok && s == want
}
