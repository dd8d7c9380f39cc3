package plugin

import (
	"bytes"
	"encoding/json"
	"io"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// treeOpts read a document for the schema validator as encoding/json reads
// it: a repeated name keeps its last value, invalid UTF-8 becomes U+FFFD.
var treeOpts = jsonv2.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// decodeJSON decodes one JSON value the way the schema validator expects
// (objects as map[string]any, arrays as []any, numbers as json.Number),
// refusing trailing data: the tree jsonschema.UnmarshalJSON builds, in one
// pass of the strict tokenizer (encoding/json's Decoder reads a value, then
// decodes it, then looks past it). Only a document that does not decode is
// read again by jsonschema.UnmarshalJSON, whose error the caller reports as
// it always has.
func decodeJSON(b []byte) (any, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(b), treeOpts)
	v, err := readTree(dec)
	if err == nil {
		if _, err = dec.ReadToken(); err == io.EOF {
			return v, nil
		}
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// readTree reads the next value of dec as a tree.
func readTree(dec *jsontext.Decoder) (any, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return nil, err
	}
	switch tok.Kind() {
	case '{':
		m := map[string]any{}
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return nil, err
			}
			key := name.String() // before the next read invalidates the token
			v, err := readTree(dec)
			if err != nil {
				return nil, err
			}
			m[key] = v
		}
		_, err := dec.ReadToken() // '}', or the error PeekKind saw
		return m, err
	case '[':
		a := []any{}
		for k := dec.PeekKind(); k != ']' && k != 0; k = dec.PeekKind() {
			v, err := readTree(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.ReadToken() // ']'
		return a, err
	case '"':
		return tok.String(), nil
	case '0':
		return json.Number(tok.String()), nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	}
	return nil, nil // 'n'
}
