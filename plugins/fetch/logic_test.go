package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/skillhost/skillhost/sdk"
)

// netFetcher performs the request with net/http, standing in for the host's
// http_fetch on a loopback server.
type netFetcher struct{ calls int }

func (f *netFetcher) Fetch(req sdk.Request) (*sdk.Response, error) {
	f.calls++
	r, err := http.NewRequest(req.Method, req.URL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range req.Headers {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return nil, sdk.Errorf("network", "%v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	h := map[string]string{}
	for k := range resp.Header {
		h[k] = resp.Header.Get(k)
	}
	return &sdk.Response{Status: resp.StatusCode, Headers: h, Body: body}, nil
}

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = io.WriteString(w, "<h1>héllo wörld</h1>")
		case "/binary":
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte{'a', 0xff, 'b'})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchURL(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	tests := []struct {
		name string
		in   FetchIn
		want FetchOut
	}{
		{"page", FetchIn{URL: srv.URL + "/page"}, FetchOut{
			URL: srv.URL + "/page", Status: 200, ContentType: "text/html; charset=utf-8",
			Body: "<h1>héllo wörld</h1>", Bytes: 22,
		}},
		{"truncated rune safe", FetchIn{URL: srv.URL + "/page#frag", MaxChars: 6}, FetchOut{
			URL: srv.URL + "/page", Status: 200, ContentType: "text/html; charset=utf-8",
			Body: "<h1>hé", Bytes: 22, Truncated: true,
		}},
		{"binary replaced", FetchIn{URL: srv.URL + "/binary"}, FetchOut{
			URL: srv.URL + "/binary", Status: 200, ContentType: "application/octet-stream",
			Body: "a\uFFFDb", Bytes: 3,
		}},
		{"not found is an answer", FetchIn{URL: srv.URL + "/missing"}, FetchOut{
			URL: srv.URL + "/missing", Status: 404, ContentType: "text/plain; charset=utf-8",
			Body: "404 page not found\n", Bytes: 19,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := fetchURL(&netFetcher{}, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFetchURLRefusesBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   FetchIn
		want string
	}{
		{"empty", FetchIn{}, "url is required"},
		{"file scheme", FetchIn{URL: "file:///etc/passwd"}, `scheme "file"`},
		{"gopher", FetchIn{URL: "gopher://example.com/"}, `scheme "gopher"`},
		{"no host", FetchIn{URL: "http:///path"}, "no host"},
		{"credentials", FetchIn{URL: "https://user:pw@example.com/"}, "credentials"},
		{"relative", FetchIn{URL: "/just/a/path"}, `scheme ""`},
		{"too long", FetchIn{URL: "https://example.com/" + strings.Repeat("a", maxURLBytes)}, "the limit is 2048"},
		{"negative max", FetchIn{URL: "https://example.com/", MaxChars: -1}, "max_chars"},
		{"huge max", FetchIn{URL: "https://example.com/", MaxChars: MaxChars + 1}, "max_chars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &netFetcher{}
			_, err := fetchURL(f, tt.in)
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput || !strings.Contains(se.Message, tt.want) {
				t.Fatalf("error = %v, want invalid_input containing %q", err, tt.want)
			}
			if f.calls != 0 {
				t.Errorf("refused input still reached the host (%d fetches)", f.calls)
			}
		})
	}
}

func TestFetchURLPassesHostErrors(t *testing.T) {
	t.Parallel()
	// Port 1 on loopback refuses connections: the host-side error comes back as is.
	_, err := fetchURL(&netFetcher{}, FetchIn{URL: "http://127.0.0.1:1/"})
	var se *sdk.Error
	if !errors.As(err, &se) || se.Code != "network" {
		t.Fatalf("error = %v, want the fetcher's network error", err)
	}
}
