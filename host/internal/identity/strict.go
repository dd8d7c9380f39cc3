package identity

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Decode decodes the JSON document data into v the way every signed or
// verified document is read on this host (tasks and chains given to
// verify, provenance links, plugin signature statements, JWKS): with the
// semantics of Go's encoding/json/v2, which
// github.com/go-json-experiment/json implements (and is, built with
// GOEXPERIMENT=jsonv2): member names match struct fields case-sensitively,
// an object naming a member twice is an error at any depth ("a" and
// "\u0061" are the same name), and invalid UTF-8 is an error.
//
// encoding/json (v1) matches names case-insensitively and keeps the last
// of repeated names, so a document carrying forged "artifacts" followed by
// the signed ones as "Artifacts" verified here while every case-sensitive
// reader (the A2A SDKs, jq, Python) saw the forged ones. Read strictly, the
// forged members are the only "artifacts" and their digest does not match
// the signed chain; a repeated name is refused outright.
func Decode(data []byte, v any) error {
	if err := jsonv2.Unmarshal(data, v); err != nil {
		return fmt.Errorf("strict JSON: %w", err)
	}
	return nil
}

// DecodeKnown is Decode that also refuses a member v has no field for.
func DecodeKnown(data []byte, v any) error {
	if err := jsonv2.Unmarshal(data, v, jsonv2.RejectUnknownMembers(true)); err != nil {
		return fmt.Errorf("strict JSON: %w", err)
	}
	return nil
}

// CheckStrict reports (nil) whether data is one JSON value that Decode
// accepts syntactically: no object names a member twice, and the text is
// valid UTF-8. Readers that decode with encoding/json for another reason
// (numbers kept exact) check the document with it first.
func CheckStrict(data []byte) error {
	var v jsontext.Value
	return Decode(data, &v)
}
