package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
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
// http.DefaultClient) and returns the JSON response body. A reply that is
// empty or not JSON is an error naming the HTTP status. JSON-RPC errors
// sent with HTTP 401, 403 or 429 are returned as bodies like any other.
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
		for _, o := range opts {
			o(req)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, err // *url.Error already names the method and URL
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
		if err != nil {
			return nil, fmt.Errorf("POST %s: reading response: %w", endpoint, err)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			return nil, fmt.Errorf("POST %s: HTTP %d with an empty body", endpoint, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
			return nil, fmt.Errorf("POST %s: HTTP %d, unexpected content type %q", endpoint, resp.StatusCode, ct)
		}
		return out, nil
	}
}
