package httpx

import (
	"bufio"
	"bytes"
	"context"
	"net/url"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// rest serves the A2A HTTP+JSON binding (Config.REST) under RESTPath: the
// binding decides status and body; a streaming reply is sent as
// Server-Sent Events, one `data:` line per event, with keep-alives.
func (s *Server) rest(c *fiber.Ctx) error {
	ctx, done := s.requestContext(c)
	query := url.Values{}
	c.Context().QueryArgs().VisitAll(func(k, v []byte) { query.Add(string(k), string(v)) })
	path := strings.TrimPrefix(c.Path(), s.cfg.RESTPath)
	r := s.cfg.REST.ServeREST(ctx, RESTRequest{Method: c.Method(), Path: path, Query: query, Body: bytes.Clone(c.Body())})
	if r.Stream != nil {
		return s.restStream(c, ctx, done, path, r.Stream)
	}
	done()
	if r.Err != nil {
		s.replyStatus(c, r.Err) // WWW-Authenticate, Retry-After
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(r.Status).Send(r.Body)
}

func (s *Server) restStream(c *fiber.Ctx, ctx context.Context, done func(), path string, stream jsonrpc.Stream) error {
	setSSEHeaders(c)
	ctx, cancel := context.WithCancel(ctx)
	stopOnShutdown := context.AfterFunc(s.streams, cancel)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer done()
		defer stopOnShutdown()
		defer cancel()
		_ = s.engine.PumpRaw(ctx, "a2a rest "+path, stream, func(msg []byte) error { return writeEvent(w, msg) },
			jsonrpc.KeepAlive(s.cfg.KeepAlive, func() error {
				if _, err := w.WriteString(": keep-alive\n\n"); err != nil {
					return err
				}
				return w.Flush()
			}))
	})
	return nil
}
