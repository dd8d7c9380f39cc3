package main

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/skillhost/skillhost/sdk"
)

// FetchIn is the input of fetch_url.
type FetchIn struct {
	URL      string `json:"url"`
	MaxChars int    `json:"max_chars,omitempty"` // default DefaultMaxChars, at most MaxChars
}

// FetchOut is the output of fetch_url.
type FetchOut struct {
	URL         string `json:"url"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Body        string `json:"body"`      // text, invalid UTF-8 replaced by U+FFFD
	Bytes       int    `json:"bytes"`     // body size as received
	Truncated   bool   `json:"truncated"` // body was cut to max_chars characters
}

// Body caps, in characters (runes).
const (
	DefaultMaxChars = 16 << 10
	MaxChars        = 256 << 10
	maxURLBytes     = 2048
)

// fetcher is what fetch_url needs from the host: *sdk.Context.
type fetcher interface {
	Fetch(req sdk.Request) (*sdk.Response, error)
}

// fetchURL validates the URL, GETs it through the host and shapes the
// response. Failures the host reports (host not allowed, network error)
// come back as the host's *sdk.Error.
func fetchURL(f fetcher, in FetchIn) (FetchOut, error) {
	u, err := checkURL(in.URL)
	if err != nil {
		return FetchOut{}, err
	}
	limit := in.MaxChars
	switch {
	case limit == 0:
		limit = DefaultMaxChars
	case limit < 0 || limit > MaxChars:
		return FetchOut{}, sdk.InvalidInput("max_chars must be between 1 and %d, got %d", MaxChars, in.MaxChars).
			WithData(map[string]any{"field": "max_chars"})
	}
	resp, err := f.Fetch(sdk.Request{Method: "GET", URL: u, Headers: map[string]string{"Accept": "text/*, application/json;q=0.9, */*;q=0.5"}})
	if err != nil {
		return FetchOut{}, err
	}
	body, truncated := truncateRunes(strings.ToValidUTF8(string(resp.Body), "\uFFFD"), limit)
	return FetchOut{
		URL:         u,
		Status:      resp.Status,
		ContentType: header(resp.Headers, "Content-Type"),
		Body:        body,
		Bytes:       len(resp.Body),
		Truncated:   truncated,
	}, nil
}

// checkURL accepts absolute http(s) URLs with a host and without user info.
func checkURL(raw string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", sdk.InvalidInput(format, args...).WithData(map[string]any{"field": "url"})
	}
	if raw == "" {
		return bad("url is required")
	}
	if len(raw) > maxURLBytes {
		return bad("url is %d bytes; the limit is %d", len(raw), maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("url does not parse: %v", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return bad("url scheme %q is not http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return bad("url has no host")
	}
	if u.User != nil {
		return bad("url must not carry credentials")
	}
	u.Fragment = ""
	return u.String(), nil
}

// truncateRunes keeps at most n runes of s.
func truncateRunes(s string, n int) (string, bool) {
	if utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for k := range s {
		if i == n {
			return s[:k], true
		}
		i++
	}
	return s, false
}

// header finds a header case-insensitively.
func header(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}
