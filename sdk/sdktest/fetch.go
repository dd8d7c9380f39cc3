package sdktest

import (
	"errors"
	"net/url"
	"strings"

	"github.com/skillhost/skillhost/sdk"
	"github.com/skillhost/skillhost/sdk/internal/wire"
)

func (h *Host) fetch(req []byte) (any, *wire.ReplyError) {
	var r sdk.Request
	if err := decode(req, &r); err != nil {
		return nil, err
	}
	switch r.Method {
	case "GET", "HEAD", "POST":
	default:
		return nil, fail(sdk.CodeBadRequest, "method %q: want GET, HEAD or POST", r.Method)
	}
	u, err := url.Parse(r.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.User != nil {
		return nil, fail(sdk.CodeBadRequest, "url %q: want an http or https URL with a host and no user info", r.URL)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if h.AllowedHosts != nil && !allowed(h.AllowedHosts, u.Hostname(), port) {
		return nil, fail(sdk.CodeHostNotAllowed, "host %q (port %s) is not in allowed_hosts", u.Hostname(), port)
	}
	h.mu.Lock()
	h.fetches = append(h.fetches, r)
	answer := h.Fetch
	h.mu.Unlock()
	if answer == nil {
		return nil, fail(sdk.CodeFetchFailed, "sdktest: no Fetch set for %s %s", r.Method, r.URL)
	}
	resp, ferr := answer(r)
	var se *sdk.Error
	switch {
	case errors.As(ferr, &se):
		return nil, fail(se.Code, "%s", se.Message)
	case ferr != nil:
		return nil, fail(sdk.CodeFetchFailed, "%v", ferr)
	case resp == nil:
		return nil, fail(sdk.CodeFetchFailed, "sdktest: Fetch returned no response")
	}
	return resp, nil
}

// allowed matches host and port against allowed_hosts patterns, as the
// host does: an exact host, or "*.suffix" for names strictly below suffix
// on a label boundary, each optionally with ":port"; an entry without a
// port allows ports 80 and 443 only.
func allowed(patterns []string, host, port string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, p := range patterns {
		want := ""
		if i := strings.LastIndex(p, ":"); i >= 0 && !strings.Contains(p[i:], "]") {
			p, want = p[:i], p[i+1:]
		}
		if want == "" && port != "80" && port != "443" || want != "" && want != port {
			continue
		}
		if suffix, ok := strings.CutPrefix(p, "*."); ok && strings.HasSuffix(host, "."+suffix) || !ok && host == p {
			return true
		}
	}
	return false
}
