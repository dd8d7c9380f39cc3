package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/client"
	"github.com/skillhost/skillhost/host/fault"
)

// reply is one canned HTTP answer.
type reply struct {
	status      int
	contentType string
	body        string
}

func mustServer(t *testing.T, r reply) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if r.contentType != "" {
			w.Header().Set("Content-Type", r.contentType)
		}
		w.WriteHeader(r.status)
		_, _ = w.Write([]byte(r.body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Replies that are not JSON-RPC are *client.HTTPError with the status and
// the start of the body, never a JSON decoding error; JSON-RPC errors sent
// with any status decode as *fault.Error.
func TestHTTPReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reply     reply
		wantHTTP  string // the HTTPError text after "POST <url>: "
		wantFault fault.Kind
	}{
		{"plain 408", reply{408, "text/plain", "Request timeout"}, "HTTP 408 Request Timeout: Request timeout", 0},
		{"JSON that is not JSON-RPC", reply{408, "application/json", `{"error":"Request Timeout"}`},
			`HTTP 408 Request Timeout: {"error":"Request Timeout"}`, 0},
		{"proxy page", reply{502, "text/html", "<html>\n  <body>Bad   gateway</body>\n</html>"},
			"HTTP 502 Bad Gateway: <html> <body>Bad gateway</body> </html>", 0},
		{"empty", reply{503, "", ""}, "HTTP 503 Service Unavailable (empty body)", 0},
		{"long body is cut", reply{500, "text/plain", strings.Repeat("x", 300)},
			"HTTP 500 Internal Server Error: " + strings.Repeat("x", 200) + "…", 0},
		{"JSON-RPC error with 401", reply{401, "application/json",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32105,"message":"Authorization failed","data":{"reason":"unauthenticated"}}}`},
			"", fault.Unauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := mustServer(t, tt.reply)
			err := client.Call(context.Background(), client.HTTP(url+"/rpc", nil), "m", nil, nil)
			var he *client.HTTPError
			if tt.wantHTTP != "" {
				if !errors.As(err, &he) {
					t.Fatalf("error = %v (%T), want *client.HTTPError", err, err)
				}
				if diff := cmp.Diff("POST "+url+"/rpc: "+tt.wantHTTP, he.Error()); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
				if he.Status != tt.reply.status {
					t.Errorf("Status = %d, want %d", he.Status, tt.reply.status)
				}
				return
			}
			if fault.KindOf(err) != tt.wantFault || errors.As(err, &he) {
				t.Errorf("error = %v, want a %v fault", err, tt.wantFault)
			}
		})
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reply     reply
		wantBody  string
		wantFault fault.Kind
		wantHTTP  int
	}{
		{"document", reply{200, "application/json", `{"plugins":[]}`}, `{"plugins":[]}`, 0, 0},
		{"refused", reply{403, "application/json",
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32105,"message":"Authorization failed","data":{"reason":"scope_denied"}}}`},
			"", fault.Forbidden, 0},
		{"not found", reply{404, "application/json", `{"error":"Not Found"}`}, "", 0, 404},
		{"200 that is not JSON", reply{200, "text/html", "<html>"}, "", 0, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := mustServer(t, tt.reply)
			body, err := client.Get(context.Background(), nil, url+"/admin/plugins")
			var he *client.HTTPError
			switch {
			case tt.wantBody != "":
				if err != nil || string(body) != tt.wantBody {
					t.Errorf("Get = %q, %v; want %q", body, err, tt.wantBody)
				}
			case tt.wantHTTP != 0:
				if !errors.As(err, &he) || he.Status != tt.wantHTTP {
					t.Errorf("error = %v, want HTTP %d", err, tt.wantHTTP)
				}
			default:
				if fault.KindOf(err) != tt.wantFault {
					t.Errorf("error = %v, want a %v fault", err, tt.wantFault)
				}
			}
		})
	}
}
