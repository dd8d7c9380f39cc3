package hostfn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/skillhost/skillhost/host/fault"
)

// Caps of the http_fetch host function.
const (
	MaxFetchBody           = 1 << 20  // bytes of a POST body
	MaxFetchURL            = 8 << 10  // bytes of a URL
	MaxFetchRequest        = 2 << 20  // bytes of one request block (base64 body, headers, URL)
	MaxRequestHeaders      = 32       // request header count
	MaxRequestHeaderValue  = 8 << 10  // bytes of one request header value
	MaxResponseHeaderBytes = 64 << 10 // bytes of all response headers
)

// forbiddenHeaders are request headers a plugin may not set: they belong to
// the transport or could smuggle a second request.
var forbiddenHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Keep-Alive": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Expect": true,
}

type fetchRequest struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    []byte            `json:"body"`
}

type fetchResult struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    []byte            `json:"body"`
}

// fetcher is one plugin's HTTP client: no proxy from the environment, every
// URL (first and redirected) checked against the allowed hosts, every dialed
// address checked by the dial guard.
type fetcher struct {
	policy NetPolicy
	hosts  hostMatcher
	client *http.Client
}

// hostRefusedError: a URL's host (or its port) is not in allowed_hosts.
type hostRefusedError struct {
	host string
	port uint16 // 0: the host itself is invalid
}

func (e *hostRefusedError) Error() string {
	if e.port == 0 {
		return fmt.Sprintf("host %q is not in the plugin's allowed_hosts", e.host)
	}
	return fmt.Sprintf("%s is not in the plugin's allowed_hosts (an entry without a port allows ports 80 and 443 only)",
		net.JoinHostPort(e.host, strconv.Itoa(int(e.port))))
}

// tooManyRedirectsError: the redirect chain is longer than MaxRedirects.
type tooManyRedirectsError struct{ max int }

func (e *tooManyRedirectsError) Error() string {
	return fmt.Sprintf("stopped after %d redirects", e.max)
}

func newFetcher(p NetPolicy, hosts hostMatcher) *fetcher {
	f := &fetcher{policy: p, hosts: hosts}
	transport := &http.Transport{
		Proxy:                  nil,           // never from the environment
		DialContext:            p.DialContext, // a refusal names the host, not the address it resolved to
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    p.Timeout,
		ResponseHeaderTimeout:  p.Timeout,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		MaxIdleConns:           8,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
	}
	f.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > p.MaxRedirects {
				return &tooManyRedirectsError{max: p.MaxRedirects}
			}
			_, err := f.checkURL(req.URL)
			return err
		},
	}
	return f
}

// checkURL refuses URLs that are not plain http(s) to an allowed host and
// port (the scheme's default port when the URL names none).
func (f *fetcher) checkURL(u *url.URL) (string, error) {
	port := uint16(80)
	switch u.Scheme {
	case "http":
	case "https":
		port = 443
	default:
		return "", fmt.Errorf("scheme %q: only http and https are allowed", u.Scheme)
	}
	if u.User != nil {
		return "", errors.New("URLs with user info are not allowed")
	}
	host, err := normalizeHost(u.Hostname())
	if err != nil {
		return "", &hostRefusedError{host: u.Hostname()}
	}
	if ps := u.Port(); ps != "" {
		if port, err = parsePort(ps); err != nil {
			return "", err
		}
	}
	if !f.hosts.allows(host, port) {
		return "", &hostRefusedError{host: host, port: port}
	}
	return host, nil
}

// fetch performs a plugin's HTTP request.
func (fn *funcs) fetch(ctx context.Context, _ *Call, raw []byte) (any, *guestError) {
	var r fetchRequest
	if gerr := decodeRequest(raw, &r); gerr != nil {
		return nil, gerr
	}
	req, gerr := fn.client.buildRequest(ctx, r)
	if gerr != nil {
		return nil, gerr
	}
	ctx, cancel := context.WithTimeout(ctx, fn.client.policy.Timeout)
	defer cancel()
	resp, err := fn.client.client.Do(req.WithContext(ctx))
	if err != nil {
		fn.deps.Logger.DebugContext(ctx, "hostfn: fetch failed", "plugin", fn.grant.Plugin, "url", req.URL.Redacted(), "error", err)
		return nil, fetchError(ctx, err)
	}
	defer resp.Body.Close()
	res := fetchResult{Status: resp.StatusCode, Headers: make(map[string]string, len(resp.Header))}
	for k, v := range resp.Header {
		res.Headers[k] = strings.Join(v, ", ")
	}
	if req.Method == http.MethodHead {
		return res, nil
	}
	limit := fn.client.policy.MaxResponseBytes
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		fn.deps.Logger.DebugContext(ctx, "hostfn: fetch failed reading the body", "plugin", fn.grant.Plugin, "url", req.URL.Redacted(), "error", err)
		return nil, fetchError(ctx, &url.Error{Op: "read", URL: resp.Request.URL.String(), Err: err})
	}
	if int64(len(body)) > limit {
		return nil, errorf(fault.GuestResponseTooLarge, "response body is larger than %d bytes", limit)
	}
	res.Body = body
	return res, nil
}

func (f *fetcher) buildRequest(ctx context.Context, r fetchRequest) (*http.Request, *guestError) {
	method := strings.ToUpper(r.Method)
	switch method {
	case "":
		method = http.MethodGet
	case http.MethodGet, http.MethodHead, http.MethodPost:
	default:
		return nil, errorf(fault.GuestBadRequest, "method %q: only GET, HEAD and POST are allowed", truncate(r.Method, 16))
	}
	if len(r.Body) > 0 && method != http.MethodPost {
		return nil, errorf(fault.GuestBadRequest, "a body is only allowed with POST")
	}
	if len(r.Body) > MaxFetchBody {
		return nil, errorf(fault.GuestRequestTooLarge, "body is %d bytes, the limit is %d", len(r.Body), MaxFetchBody)
	}
	if len(r.URL) > MaxFetchURL {
		return nil, errorf(fault.GuestBadRequest, "URL longer than %d bytes", MaxFetchURL)
	}
	u, err := url.Parse(r.URL)
	if err != nil {
		return nil, errorf(fault.GuestBadRequest, "URL: %v", err)
	}
	if _, err := f.checkURL(u); err != nil {
		var hr *hostRefusedError
		if errors.As(err, &hr) {
			return nil, errorf(fault.GuestHostNotAllowed, "%v", err)
		}
		return nil, errorf(fault.GuestBadRequest, "%v", err)
	}
	if len(r.Headers) > MaxRequestHeaders {
		return nil, errorf(fault.GuestBadRequest, "%d headers, the limit is %d", len(r.Headers), MaxRequestHeaders)
	}
	var body io.Reader
	if method == http.MethodPost {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, errorf(fault.GuestBadRequest, "request: %v", err)
	}
	for k, v := range r.Headers {
		name := http.CanonicalHeaderKey(k)
		switch {
		case !validHeaderName(k):
			return nil, errorf(fault.GuestBadRequest, "invalid header name %q", truncate(k, 64))
		case forbiddenHeaders[name] || strings.HasPrefix(name, "Proxy-"):
			return nil, errorf(fault.GuestBadRequest, "header %q may not be set by a plugin", name)
		case len(v) > MaxRequestHeaderValue:
			return nil, errorf(fault.GuestBadRequest, "header %q is longer than %d bytes", name, MaxRequestHeaderValue)
		case strings.ContainsAny(v, "\r\n\x00"):
			return nil, errorf(fault.GuestBadRequest, "header %q contains a control character", name)
		}
		req.Header.Set(name, v)
	}
	return req, nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// fetchError maps a client failure to a guest error code and a stable
// message. The message names only what the plugin asked for (the URL's
// host and port), never what the host knows: not its DNS resolver's
// address, not the address dialed, not the text of a system error (the
// full error goes to the host's debug log instead).
func fetchError(ctx context.Context, err error) *guestError {
	return failure(err, ctx.Err() != nil)
}

// FailureText describes a failed exchange of a client of NetPolicy (Client,
// DialContext) as http_fetch describes it to plugins: naming only the URL's
// host and the rule that refused it, never an address dialed, the resolver
// or a system error's text. Plan webhooks show it as last_error.
func FailureText(err error) string { return failure(err, false).Message }

// failure classifies err; ended reports that the caller's context ended.
func failure(err error, ended bool) *guestError {
	var (
		refused  *refusedAddrError
		host     *hostRefusedError
		tooMany  *tooManyRedirectsError
		dns      *net.DNSError
		netError net.Error
	)
	switch {
	case errors.As(err, &refused):
		return errorf(fault.GuestAddressRefused, "%v", refused)
	case errors.As(err, &host):
		return errorf(fault.GuestHostNotAllowed, "redirect refused: %v", host)
	case errors.As(err, &tooMany):
		return errorf(fault.GuestFetchFailed, "%v", tooMany)
	case ended || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netError) && netError.Timeout()):
		return errorf(fault.GuestTimeout, "the request did not finish in time")
	case strings.Contains(err.Error(), "server response headers exceeded"):
		return errorf(fault.GuestResponseTooLarge, "response headers are larger than %d bytes", MaxResponseHeaderBytes)
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return errorf(fault.GuestFetchFailed, "host %q was not found (DNS)", truncate(dns.Name, maxHostLen))
		}
		return errorf(fault.GuestFetchFailed, "host %q could not be resolved (DNS)", truncate(dns.Name, maxHostLen))
	}
	target := "the server"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
			target = u.Host
		}
	}
	var (
		certErr    *tls.CertificateVerificationError
		unknownCA  x509.UnknownAuthorityError
		hostErr    x509.HostnameError
		invalidErr x509.CertificateInvalidError
		recordErr  tls.RecordHeaderError
		alertErr   tls.AlertError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return errorf(fault.GuestFetchFailed, "connection to %s refused", target)
	case errors.Is(err, syscall.ECONNRESET):
		return errorf(fault.GuestFetchFailed, "connection to %s reset", target)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return errorf(fault.GuestFetchFailed, "%s is unreachable", target)
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalidErr):
		return errorf(fault.GuestFetchFailed, "the TLS certificate of %s was not accepted", target)
	case errors.As(err, &recordErr), errors.As(err, &alertErr):
		return errorf(fault.GuestFetchFailed, "the TLS handshake with %s failed", target)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(fault.GuestFetchFailed, "%s closed the connection before a complete response", target)
	}
	return errorf(fault.GuestFetchFailed, "the request to %s failed", target)
}
