package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/sdktest"
)

// site answers the fake host's http_fetch like a small web site.
func site(req sdk.Request) (*sdk.Response, error) {
	page := func(ct string, body []byte) *sdk.Response {
		return &sdk.Response{Status: 200, Headers: map[string]string{"Content-Type": ct}, Body: body}
	}
	switch strings.TrimPrefix(req.URL, "https://example.com") {
	case "/page":
		return page("text/html; charset=utf-8", []byte("<h1>héllo wörld</h1>")), nil
	case "/binary":
		return page("application/octet-stream", []byte{'a', 0xff, 'b'}), nil
	case "/slow":
		return nil, sdk.Errorf(sdk.CodeTimeout, "the fetch did not finish in time")
	default:
		return &sdk.Response{Status: 404, Headers: map[string]string{"content-type": "text/plain; charset=utf-8"}, Body: []byte("404 page not found\n")}, nil
	}
}

// newHost is a fake host granting example.com, as plugin.yaml asks.
func newHost() *sdktest.Host {
	h := sdktest.New()
	h.AllowedHosts, h.Fetch = []string{"example.com"}, site
	return h
}

func TestFetchURL(t *testing.T) {
	t.Parallel()
	const base = "https://example.com"
	tests := []struct {
		name string
		in   FetchIn
		want FetchOut
	}{
		{"page", FetchIn{URL: base + "/page"}, FetchOut{
			URL: base + "/page", Status: 200, ContentType: "text/html; charset=utf-8",
			Body: "<h1>héllo wörld</h1>", Bytes: 22,
		}},
		{"truncated rune safe", FetchIn{URL: base + "/page#frag", MaxChars: 6}, FetchOut{
			URL: base + "/page", Status: 200, ContentType: "text/html; charset=utf-8",
			Body: "<h1>hé", Bytes: 22, Truncated: true,
		}},
		{"binary replaced", FetchIn{URL: base + "/binary"}, FetchOut{
			URL: base + "/binary", Status: 200, ContentType: "application/octet-stream",
			Body: "a\uFFFDb", Bytes: 3,
		}},
		{"not found is an answer", FetchIn{URL: base + "/missing"}, FetchOut{
			URL: base + "/missing", Status: 404, ContentType: "text/plain; charset=utf-8",
			Body: "404 page not found\n", Bytes: 19,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHost()
			got, err := fetchURL(h.Context(), tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			sent := h.Fetches()
			if len(sent) != 1 || sent[0].Method != "GET" || sent[0].URL != tt.want.URL || !strings.HasPrefix(sent[0].Headers["Accept"], "text/*") {
				t.Errorf("requests sent = %+v, want one GET of %s accepting text", sent, tt.want.URL)
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
			h := newHost()
			_, err := fetchURL(h.Context(), tt.in)
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != sdk.CodeInvalidInput || !strings.Contains(se.Message, tt.want) {
				t.Fatalf("error = %v, want invalid_input containing %q", err, tt.want)
			}
			if n := len(h.Fetches()); n != 0 {
				t.Errorf("refused input still reached the host (%d fetches)", n)
			}
		})
	}
}

// TestFetchURLPassesHostErrors: the host's refusals and failures come back
// with the host's code.
func TestFetchURLPassesHostErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, code string }{
		{"https://example.net/", sdk.CodeHostNotAllowed}, // not in allowed_hosts: refused before any request
		{"https://example.com:8443/", sdk.CodeHostNotAllowed},
		{"https://example.com/slow", sdk.CodeTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			_, err := fetchURL(newHost().Context(), FetchIn{URL: tt.url})
			var se *sdk.Error
			if !errors.As(err, &se) || se.Code != tt.code {
				t.Fatalf("error = %v, want the host's %s", err, tt.code)
			}
		})
	}
}
