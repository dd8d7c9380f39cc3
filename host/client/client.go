package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"

	"github.com/skillhost/skillhost/host/fault"
)

// Doer sends one JSON-RPC request body and returns the response body.
type Doer func(ctx context.Context, body []byte) ([]byte, error)

// Call sends a request for method with params (nil: no params member)
// through doer and decodes the result into result (nil: discard it). An
// error response is returned as a *fault.Error whose Kind comes from the code
// (fault.KindOfCode; unknown codes become Internal with data "code"), whose
// Reason is the data's reason and whose Data holds the other data members.
func Call(ctx context.Context, doer Doer, method string, params any, result any) error {
	id, _ := json.Marshal("req_" + rand.Text())
	req := struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
		ID      json.RawMessage `json:"id"`
	}{"2.0", method, params, id}
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("jsonrpc: encode %s request: %w", method, err)
	}
	respBody, err := doer(ctx, body)
	if err != nil {
		return fmt.Errorf("jsonrpc: %s: %w", method, err)
	}
	var resp struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
		Error   *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(respBody, &resp); err != nil {
		return fmt.Errorf("jsonrpc: %s: malformed response: %w", method, err)
	}
	if resp.JSONRPC != "2.0" {
		return fmt.Errorf("jsonrpc: %s: response is not JSON-RPC 2.0", method)
	}
	if resp.Error != nil {
		return fault.Decode(resp.Error.Code, resp.Error.Message, resp.Error.Data)
	}
	if string(resp.ID) != string(id) {
		return fmt.Errorf("jsonrpc: %s: response id %s does not match request id %s", method, resp.ID, id)
	}
	if resp.Result == nil {
		return fmt.Errorf("jsonrpc: %s: response has neither result nor error", method)
	}
	if result == nil {
		return nil
	}
	if err := json.Unmarshal(resp.Result, result); err != nil {
		return fmt.Errorf("jsonrpc: %s: decode result: %w", method, err)
	}
	return nil
}
