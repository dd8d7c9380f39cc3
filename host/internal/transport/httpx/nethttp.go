package httpx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
)

// maxStreamBuffer caps what a net/http handler's response holds unsent.
const maxStreamBuffer = 8 << 20

// errResponseGone is what a handler's Write returns once the client is gone.
var errResponseGone = errors.New("httpx: the client is gone")

// serveNetHTTP runs a net/http handler (the MCP SDK's) for the request
// with ctx as its context. Unlike Fiber's adaptor, which buffers the whole
// response, a handler that flushes (Server-Sent Events) is streamed: what
// it wrote goes out at each Flush. done is called when the response is over.
func (s *Server) serveNetHTTP(c *fiber.Ctx, ctx context.Context, done func(), h http.Handler) error {
	req, err := adaptor.ConvertRequest(c, true)
	if err != nil {
		done()
		return err
	}
	// The handler may outlive Fiber's buffers: give it its own body.
	req.Body = http.NoBody
	if b := c.Body(); len(b) > 0 {
		req.Body = readCloser{bytes.NewReader(bytes.Clone(b))}
	}
	ctx, cancel := context.WithCancel(ctx)
	stopOnShutdown := context.AfterFunc(s.streams, cancel)
	finish := func() { stopOnShutdown(); cancel(); done() }
	req = req.WithContext(ctx)

	rw := newStreamWriter()
	go func() {
		defer rw.end()
		h.ServeHTTP(rw, req)
	}()
	streaming := rw.wait()
	status, header, body := rw.head()
	for k, vs := range header {
		for _, v := range vs {
			c.Response().Header.Add(k, v)
		}
	}
	c.Status(status)
	if !streaming {
		finish()
		return c.Send(body)
	}
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer finish()
		defer rw.gone()
		if len(body) > 0 {
			if _, err := w.Write(body); err != nil || w.Flush() != nil {
				return
			}
		}
		for {
			chunk, ok := rw.next()
			if !ok {
				return
			}
			if _, err := w.Write(chunk); err != nil || w.Flush() != nil {
				return
			}
		}
	})
	return nil
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

// streamWriter is the http.ResponseWriter of serveNetHTTP: writes are
// buffered until the handler flushes (then streamed) or returns.
type streamWriter struct {
	header http.Header

	mu        sync.Mutex
	cond      *sync.Cond
	status    int
	buf       []byte
	flushed   bool // the handler flushed: the response streams
	ended     bool // the handler returned
	closed    bool // the client is gone
	headerOut http.Header
}

func newStreamWriter() *streamWriter {
	w := &streamWriter{header: http.Header{}}
	w.cond = sync.NewCond(&w.mu)
	return w
}

func (w *streamWriter) Header() http.Header { return w.header }

func (w *streamWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
		w.headerOut = w.header.Clone()
	}
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, errResponseGone
	}
	if len(w.buf)+len(p) > maxStreamBuffer { // the client does not read
		w.closed, w.buf = true, nil
		w.cond.Broadcast()
		return 0, errResponseGone
	}
	w.buf = append(w.buf, p...)
	w.cond.Broadcast()
	return len(p), nil
}

// Flush starts streaming (the SDK flushes each SSE event).
func (w *streamWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	w.flushed = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *streamWriter) end() {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	w.ended = true
	w.cond.Broadcast()
	w.mu.Unlock()
}

// gone marks the client gone: later writes fail.
func (w *streamWriter) gone() {
	w.mu.Lock()
	w.closed = true
	w.buf = nil
	w.cond.Broadcast()
	w.mu.Unlock()
}

// wait blocks until the handler flushed or returned; it reports whether
// the response streams.
func (w *streamWriter) wait() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for !w.flushed && !w.ended {
		w.cond.Wait()
	}
	return w.flushed
}

// head returns the status, the headers and what was written so far (taken).
func (w *streamWriter) head() (int, http.Header, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.buf
	w.buf = nil
	return w.status, w.headerOut, b
}

// next blocks for more body; false once the handler returned and all was taken.
func (w *streamWriter) next() ([]byte, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.buf) == 0 && !w.ended {
		w.cond.Wait()
	}
	if len(w.buf) == 0 {
		return nil, false
	}
	b := w.buf
	w.buf = nil
	return b, true
}
