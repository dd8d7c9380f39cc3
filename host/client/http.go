package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/skillhost/skillhost/host/fault"
)

// maxResponseBytes bounds the response body HTTP reads (64 MiB).
const maxResponseBytes = 64 << 20

// Endpoint accepts a host's base URL or its full JSON-RPC endpoint URL and
// returns the endpoint: a bare base (no path, or "/") gets "/rpc".
func Endpoint(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an http(s) URL", s)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/rpc"
	}
	return u.String(), nil
}

// HTTPOption adjusts the requests of an HTTP Doer.
type HTTPOption func(*http.Request)

// WithAPIKey sends key (an API key or a session token) as
// "Authorization: Bearer <key>"; "" sends none.
func WithAPIKey(key string) HTTPOption {
	return func(r *http.Request) {
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
	}
}

// HTTP returns a Doer that POSTs each body to endpoint with hc (nil:
// http.DefaultClient) and returns the response body when it is JSON-RPC,
// whatever the HTTP status (the host sends JSON-RPC errors with 401, 403,
// 413, 415 and 429 too). Any other reply — empty, not JSON, JSON that is not
// JSON-RPC, such as a server's plain 408 or a proxy's error page — is an
// *HTTPError naming the status and the start of the body.
func HTTP(endpoint string, hc *http.Client, opts ...HTTPOption) Doer {
	if hc == nil {
		hc = http.DefaultClient
	}
	return func(ctx context.Context, body []byte) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		out, status, err := do(hc, req, opts)
		if err != nil {
			return nil, err
		}
		if !isJSONRPC(out) {
			return nil, newHTTPError(req, status, out)
		}
		return out, nil
	}
}

// Get fetches a JSON document (the host's admin endpoints) from url with hc
// (nil: http.DefaultClient). A 200 reply's body is returned; a refusal the
// host answers with a JSON-RPC error (401, 403, 429) is that error as a
// *fault.Error; anything else is an *HTTPError.
func Get(ctx context.Context, hc *http.Client, url string, opts ...HTTPOption) ([]byte, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	out, status, err := do(hc, req, opts)
	if err != nil {
		return nil, err
	}
	if status == http.StatusOK && json.Valid(out) {
		return out, nil
	}
	if isJSONRPC(out) {
		var resp struct {
			Error *struct {
				Code    int             `json:"code"`
				Message string          `json:"message"`
				Data    json.RawMessage `json:"data"`
			} `json:"error"`
		}
		if json.Unmarshal(out, &resp) == nil && resp.Error != nil {
			fe := fault.Decode(resp.Error.Code, resp.Error.Message, resp.Error.Data)
			if status == http.StatusForbidden && fe.Kind == fault.Unauthorized { // -32105 is both; the status tells
				fe.Kind = fault.Forbidden
			}
			return nil, fe
		}
	}
	return nil, newHTTPError(req, status, out)
}

// do sends req with opts applied and reads at most maxResponseBytes of
// the reply.
func do(hc *http.Client, req *http.Request, opts []HTTPOption) ([]byte, int, error) {
	for _, o := range opts {
		o(req)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, err // *url.Error already names the method and URL
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: reading response: %w", req.Method, req.URL, err)
	}
	return out, resp.StatusCode, nil
}

// isJSONRPC reports whether body is a JSON-RPC 2.0 response object or a
// batch of them.
func isJSONRPC(body []byte) bool {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		return json.Valid(body)
	}
	var probe struct {
		JSONRPC string `json:"jsonrpc"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.JSONRPC == "2.0"
}

// HTTPError is a reply that is not what the client expects: not JSON-RPC
// (a server's plain 408, a proxy's error page, an empty body), or, for Get,
// not a 200 JSON document.
type HTTPError struct {
	Method, URL string
	Status      int    // the HTTP status code
	Body        string // the start of the body, at most maxErrorBody bytes, whitespace collapsed
}

// maxErrorBody caps the body kept in an HTTPError.
const maxErrorBody = 200

func newHTTPError(req *http.Request, status int, body []byte) *HTTPError {
	snippet := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "\uFFFD")), " ")
	if len(snippet) > maxErrorBody {
		cut := maxErrorBody
		for cut > 0 && !utf8.RuneStart(snippet[cut]) {
			cut--
		}
		snippet = snippet[:cut] + "…"
	}
	return &HTTPError{Method: req.Method, URL: req.URL.String(), Status: status, Body: snippet}
}

// Error reads "POST http://…/rpc: HTTP 408 Request Timeout: <body>".
func (e *HTTPError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d %s", e.Method, e.URL, e.Status, http.StatusText(e.Status))
	if e.Body == "" {
		return msg + " (empty body)"
	}
	return msg + ": " + e.Body
}

// NewHTTPClient returns an HTTP client that trusts the system's
// certificate authorities and, when caPEM is not empty, those PEM
// certificates too (a host whose certificate a private CA signed). It is
// what the CLI's --cacert builds.
func NewHTTPClient(caPEM []byte) (*http.Client, error) {
	if len(caPEM) == 0 {
		return http.DefaultClient, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no PEM certificate found")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	return &http.Client{Transport: tr}, nil
}
