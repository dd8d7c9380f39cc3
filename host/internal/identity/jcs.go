package identity

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"
)

// Canonical returns the RFC 8785 (JCS) form of the JSON document data:
// members sorted by UTF-16 code units, numbers in ECMAScript form, no
// insignificant whitespace. data is checked by encoding/json first, whose
// scanner bounds nesting, so a hostile document cannot exhaust the stack.
func Canonical(data []byte) ([]byte, error) {
	if !json.Valid(data) {
		return nil, errors.New("identity: canonicalize: not valid JSON")
	}
	out, err := jcs.Transform(data)
	if err != nil {
		return nil, fmt.Errorf("identity: canonicalize: %w", err)
	}
	return out, nil
}

// CanonicalValue marshals v with encoding/json and canonicalizes the result.
func CanonicalValue(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("identity: canonicalize: %w", err)
	}
	return Canonical(b)
}
