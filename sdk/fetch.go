package sdk

import (
	"encoding/json"

	"github.com/skillhost/skillhost/sdk/internal/wire"
)

// Request is an HTTP request made through the host. Only hosts listed in the
// manifest's permissions.allowed_hosts are reachable; private and loopback
// addresses are refused unless the operator allows them.
type Request struct {
	Method  string            `json:"method"`            // GET, HEAD or POST; "" means GET
	URL     string            `json:"url"`               // http or https
	Headers map[string]string `json:"headers,omitempty"` // request headers
	Body    []byte            `json:"body,omitempty"`    // POST body (base64 on the wire)
}

// Response is the host's answer to a Request. The whole body is read; a body
// larger than the host's cap is an error (code "response_too_large"), never
// silently truncated.
type Response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"` // repeated headers joined with ", "
	Body    []byte            `json:"body,omitempty"`    // base64 on the wire
}

// Text returns the body as a string.
func (r *Response) Text() string { return string(r.Body) }

// JSON decodes the body into v.
func (r *Response) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Fetch performs req through the host's http_fetch. Failures carry the
// host's code: CodeHostNotAllowed, CodeAddressRefused, CodeBadRequest,
// CodeRequestTooLarge, CodeResponseTooLarge, CodeTimeout, CodeFetchFailed.
func (c *Context) Fetch(req Request) (*Response, error) {
	if req.Method == "" {
		req.Method = "GET"
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return nil, InvalidInput("request does not encode: %v", err)
	}
	var resp Response
	if err := decodeReply(wire.FnHTTPFetch, c.t.Call(wire.FnHTTPFetch, raw), &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
