package httpx

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/skillhost/skillhost/host/fault"
)

// Access describes one HTTP request once it is answered, for access logs
// and metrics (Config.Access).
type Access struct {
	// HTTPMethod is the request's method (GET, POST, …).
	HTTPMethod string
	// Route is the route that answered, as registered ("/rpc",
	// "/admin/:doc", "/ui"), or "unmatched": never the client's path, so
	// it is safe as a metric label.
	Route string
	// Path is the client's path, at most 100 bytes.
	Path string
	// Status is the HTTP status sent (200 for a stream that started).
	Status int
	// Err is the JSON-RPC error the response carried (a refusal), if any.
	Err *fault.Error
	// RPC reports that the JSON-RPC engine handled the body: each call in
	// it has an access line of its own.
	RPC bool
	// RequestID is the request's X-Request-ID (the client's or the host's).
	RequestID string
	// KeyID is the API key's id once authenticated (empty for loopback).
	KeyID string
	// SessionID is the session_id query parameter of GET /events, at most
	// 100 bytes.
	SessionID string
	// Remote is the client's address.
	Remote string
	// Duration is the time until the response (for a stream: until it
	// started). Zero for a request the server refused before routing it
	// (a body over the limit, a read timeout, oversized headers).
	Duration time.Duration
}

// Locals the access middleware reads.
const (
	accessStartLocal = "access_start" // time.Time: the middleware saw the request
	rpcLocal         = "rpc_handled"  // bool: the engine handled the body
	refusalLocal     = "refusal"      // *fault.Error: the error sent
)

// unmatched is the Route of a request no route answered.
const unmatched = "unmatched"

// access is the outermost middleware: it answers a handler's error with
// the error handler (so the status is known) and reports the request.
func (s *Server) access(c *fiber.Ctx) error {
	start := time.Now()
	c.Locals(accessStartLocal, start)
	if err := c.Next(); err != nil {
		if herr := s.errorHandler(c, err); herr != nil {
			_ = c.SendStatus(fiber.StatusInternalServerError)
		}
	}
	s.report(c, time.Since(start))
	return nil
}

// report passes the answered request to Config.Access.
func (s *Server) report(c *fiber.Ctx, d time.Duration) {
	if s.cfg.Access == nil {
		return
	}
	a := Access{
		// Fiber's strings live in its buffers: copy what may outlive them.
		HTTPMethod: strings.Clone(c.Method()), Route: routeOf(c), Path: strings.Clone(clipHeader(c.Path())),
		Status: c.Response().StatusCode(), RequestID: ensureRequestID(c), KeyID: principalOf(c).KeyID(),
		Remote:   c.Context().RemoteAddr().String(),
		Duration: d,
	}
	a.Err, _ = c.Locals(refusalLocal).(*fault.Error)
	a.RPC, _ = c.Locals(rpcLocal).(bool)
	if a.Route == "/events" && c.Method() == fiber.MethodGet {
		a.SessionID = strings.Clone(clipHeader(c.Query("session_id")))
	}
	s.cfg.Access.Answered(context.WithoutCancel(c.UserContext()), a)
}

// routeOf names the route that answered c. A request refused before
// routing (by the HTTP server) carries no route: its path names it only
// when it is one of the body-taking routes.
func routeOf(c *fiber.Ctx) string {
	r := c.Route()
	if len(r.Handlers) == 0 {
		switch c.Path() { // constants: Fiber's path lives in a reused buffer
		case "/rpc":
			return "/rpc"
		case "/events":
			return "/events"
		}
		return unmatched
	}
	if r.Path == "/" { // only the app-wide middleware matched
		return unmatched
	}
	return r.Path
}
