package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/internal/hostfn"
)

// Headers this host sends to peers.
const (
	// DepthHeader carries the depth of an agent call across hosts: how many
	// nested or forwarded agent calls led to it. A skillhost peer reads it
	// and refuses a chain longer than its agents.max_call_depth.
	DepthHeader = "X-Skillhost-Call-Depth"
)

// Transport limits.
const (
	dialTimeout       = 5 * time.Second
	tlsTimeout        = 10 * time.Second
	maxResponseHeader = 64 << 10
	// recordBytes is how much of a response body an exchange keeps for
	// classifying a failure (a JSON-RPC error response fits easily).
	recordBytes = 64 << 10
)

// errHostNotAllowed is the transport's refusal of a URL outside the peer's
// url and hosts (an interface URL from the card, a redirect).
var errHostNotAllowed = errors.New("the URL's host is neither the peer's url nor in its hosts")

// errTooLarge is the capped body's refusal past max_response.
var errTooLarge = errors.New("response body over max_response")

// exchange records what one attempt's HTTP round trips saw, for classifying
// a failure from evidence: the last status and the start of the last body.
// The transport finds it in the request context (withExchange).
type exchange struct {
	mu       sync.Mutex
	status   int
	body     bytes.Buffer
	tooLarge bool
}

type exchangeKey struct{}

func withExchange(ctx context.Context, x *exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

func exchangeFrom(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	return x
}

// snapshot returns the recorded status, body start and whether the body
// was cut at max_response.
func (x *exchange) snapshot() (int, []byte, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.status, bytes.Clone(x.body.Bytes()), x.tooLarge
}

// newHTTPClient returns the peer's client: dials through http_fetch's guard
// (internal addresses only as p.allow lists), no proxy, no redirects,
// requests only to p's origins, bodies capped at max_response.
func newHTTPClient(p *peerConfig, resolver *net.Resolver) *http.Client {
	dialer := hostfn.NetPolicy{AllowPrivate: p.allow, Timeout: dialTimeout, Resolver: resolver}.Dialer()
	base := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		TLSHandshakeTimeout:    tlsTimeout,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: maxResponseHeader,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: &guarded{base: base, peer: p, max: int64(p.MaxResponse)},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is answered as the status it is
		},
	}
}

// guarded is the peer's RoundTripper: it refuses other origins, records
// each exchange and caps response bodies.
type guarded struct {
	base http.RoundTripper
	peer *peerConfig
	max  int64
}

func (g *guarded) RoundTrip(req *http.Request) (*http.Response, error) {
	if !g.peer.reaches(req.URL) {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%s: %w", req.URL.Redacted(), errHostNotAllowed)
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	x := exchangeFrom(req.Context())
	if x != nil {
		x.mu.Lock()
		x.status, x.tooLarge = resp.StatusCode, false
		x.body.Reset()
		x.mu.Unlock()
	}
	resp.Body = &cappedBody{rc: resp.Body, left: g.max, x: x}
	return resp, nil
}

// cappedBody fails a read past its cap (never a silent truncation) and
// copies the first recordBytes into the exchange.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	x    *exchange
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.left <= 0 { // at the cap: anything more is too much
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n == 0 {
			return 0, err
		}
		if b.x != nil {
			b.x.mu.Lock()
			b.x.tooLarge = true
			b.x.mu.Unlock()
		}
		return 0, errTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.x != nil && n > 0 {
		b.x.mu.Lock()
		if room := recordBytes - b.x.body.Len(); room > 0 {
			b.x.body.Write(p[:min(n, room)])
		}
		b.x.mu.Unlock()
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
