// Package ocitest starts real OCI registries for tests: go-containerregistry's
// in-memory registry (the distribution API: blobs, manifests, tags) over
// HTTP on 127.0.0.1, optionally behind basic auth or a handler that turns
// it hostile. Test support only.
package ocitest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is a running registry. Its methods are safe for concurrent use.
type Registry struct {
	// Host is its host:port, the registry part of a reference.
	Host string
	srv  *httptest.Server
	// BlobGets counts GET requests for blobs (layers), answered or not.
	BlobGets atomic.Int64
}

// Option adjusts a registry.
type Option func(*options)

type options struct {
	user, pass string
	wrap       func(http.Handler) http.Handler
}

// BasicAuth makes the registry answer 401 (WWW-Authenticate: Basic) to any
// request without these credentials.
func BasicAuth(user, pass string) Option {
	return func(o *options) { o.user, o.pass = user, pass }
}

// Wrap puts h in front of the registry (to lie about what it stores).
func Wrap(h func(next http.Handler) http.Handler) Option {
	return func(o *options) { o.wrap = h }
}

// Start starts a registry on 127.0.0.1; it is closed when the test ends.
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	r := &Registry{}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if o.wrap != nil {
		h = o.wrap(h)
	}
	inner := h
	h = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if o.user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != o.user || p != o.pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="ocitest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") {
			r.BlobGets.Add(1)
		}
		inner.ServeHTTP(w, req)
	})
	r.srv = httptest.NewServer(h)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	t.Cleanup(r.Close)
	return r
}

// Close stops the registry (what it stored is gone); later requests are
// refused. Idempotent.
func (r *Registry) Close() {
	r.srv.CloseClientConnections()
	r.srv.Close()
}
