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
	accessStartLocal = "access_start" // true: the middleware saw the request
	rpcLocal         = "rpc_handled"  // bool: the engine handled the body
	refusalLocal     = "refusal"      // *fault.Error: the error sent
)

// unmatched is the Route of a request no route answered.
const unmatched = "unmatched"

// access is the outermost middleware: it answers a handler's error with
// the error handler (so the status is known) and reports the request.
func (s *Server) access(c *fiber.Ctx) error {
	start := time.Now()
	c.Locals(accessStartLocal, true) // a bool in an interface costs no allocation
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
	route := routeOf(c)
	a := Access{
		// Fiber's strings live in its buffers: copy what may outlive them
		// (the method and a path naming its route are constants).
		HTTPMethod: methodOf(c), Route: route, Path: pathOf(c, route),
		Status: c.Response().StatusCode(), RequestID: ensureRequestID(c), KeyID: principalOf(c).KeyID(),
		Remote:   remoteOf(c),
		Duration: d,
	}
	a.Err, _ = c.Locals(refusalLocal).(*fault.Error)
	a.RPC, _ = c.Locals(rpcLocal).(bool)
	if a.Route == "/events" && c.Method() == fiber.MethodGet {
		a.SessionID = strings.Clone(clipHeader(c.Query("session_id")))
	}
	ctx := c.UserContext()
	if ctx.Done() != nil { // a context that never ends needs no detaching
		ctx = context.WithoutCancel(ctx)
	}
	s.cfg.Access.Answered(ctx, a)
}

// methodOf is the request's method, a constant for the standard ones.
func methodOf(c *fiber.Ctx) string {
	switch m := c.Method(); m {
	case fiber.MethodGet:
		return fiber.MethodGet
	case fiber.MethodPost:
		return fiber.MethodPost
	case fiber.MethodHead:
		return fiber.MethodHead
	case fiber.MethodPut:
		return fiber.MethodPut
	case fiber.MethodDelete:
		return fiber.MethodDelete
	case fiber.MethodPatch:
		return fiber.MethodPatch
	case fiber.MethodOptions:
		return fiber.MethodOptions
	default:
		return strings.Clone(m)
	}
}

// pathOf is the client's path clipped (clipHeader): the route's own string
// when the path is the route (no parameters), else a copy.
func pathOf(c *fiber.Ctx, route string) string {
	if p := c.Path(); p == route {
		return route
	}
	return strings.Clone(clipHeader(c.Path()))
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
