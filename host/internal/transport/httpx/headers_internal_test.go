package httpx

import (
	"net/http"
	"testing"

	"github.com/valyala/fasthttp"
)

// TestHeaderCopyMatchesHTTPHeader: the copied headers answer lookups as the
// http.Header they replace did.
func TestHeaderCopyMatchesHTTPHeader(t *testing.T) {
	t.Parallel()
	var req fasthttp.Request
	req.Header.SetMethod("POST")
	req.Header.SetHost("127.0.0.1:8080")
	req.Header.SetContentType("application/json")
	req.Header.Add("A2A-Version", "1.0")
	req.Header.Add("X-Skillhost-Depth", "2")
	req.Header.Add("X-Skillhost-Depth", "3")
	req.Header.Add("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req.Header.Add("X-Empty", "")
	want := http.Header{}
	req.Header.VisitAll(func(k, v []byte) { want.Add(string(k), string(v)) })
	got := copyHeaders(&req.Header)
	for _, name := range []string{"a2a-version", "A2A-VERSION", "X-Skillhost-Depth", "Traceparent", "tracestate", "Host",
		"Content-Type", "X-Empty", "", "X-Skillhost-Dept", "User-Agent"} {
		if g, w := got.get(name), want.Get(name); g != w {
			t.Errorf("get(%q) = %q, http.Header says %q", name, g, w)
		}
	}
}
