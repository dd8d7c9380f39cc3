package main

import (
	"bytes"
	"encoding/json"

	"github.com/skillhost/skillhost/sdk"
)

// echo returns the input unchanged (compacted). An empty input echoes as {};
// anything that is not a single JSON value is refused.
func echo(in []byte) ([]byte, error) {
	in = bytes.TrimSpace(in)
	if len(in) == 0 {
		return []byte("{}"), nil
	}
	if !json.Valid(in) {
		return nil, sdk.InvalidInput("input is not a JSON value")
	}
	var out bytes.Buffer
	if err := json.Compact(&out, in); err != nil {
		return nil, sdk.InvalidInput("input is not a JSON value: %v", err)
	}
	return out.Bytes(), nil
}
