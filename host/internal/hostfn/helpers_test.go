package hostfn

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
)

// loopback is the allow_private prefix that lets tests reach their fixtures.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// mustFuncs builds one plugin's host-function state.
func mustFuncs(t *testing.T, deps Deps, hosts ...string) *funcs {
	t.Helper()
	return newFuncs(deps, Grant{Plugin: "test-plugin", AllowedHosts: hosts})
}

// mustJSON encodes v.
func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return b
}

// doFetch calls the http_fetch handler directly.
func doFetch(t *testing.T, f *funcs, req fetchRequest) (fetchResult, *guestError) {
	t.Helper()
	res, gerr := f.fetch(t.Context(), &Call{}, mustJSON(t, req))
	if gerr != nil {
		return fetchResult{}, gerr
	}
	return res.(fetchResult), nil
}

// fixture is an HTTP server on 127.0.0.1 counting hits per path.
type fixture struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

func newFixture(t *testing.T, h http.HandlerFunc) *fixture {
	t.Helper()
	f := &fixture{hits: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.hits[r.URL.Path]++
		f.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fixture) hitCount(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// host is the fixture's "127.0.0.1" host name and port.
func (f *fixture) hostPort(t *testing.T) (string, string) {
	t.Helper()
	u, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), u.Port()
}
