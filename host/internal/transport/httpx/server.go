package httpx

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/pprof"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/share"
)

// CardSource serves Agent Cards. Card bodies are complete JSON documents.
type CardSource interface {
	// Card returns the host's Agent Card and its ETag.
	Card(ctx context.Context) (body []byte, etag string, err error)
	// AgentCard returns the card of one agent (plugin); a *fault.Error of
	// kind AgentNotFound when there is none.
	AgentCard(ctx context.Context, name string) (body []byte, etag string, err error)
}

// Server is the Fiber app. Create it with New.
type Server struct {
	cfg     Config
	hosts   []string // Host values accepted in loopback-only mode (set by Serve)
	origins []string // browser origins accepted (set by Serve)
	app     *fiber.App
	engine  *jsonrpc.Engine
	cards   CardSource
	base    context.Context // requests; canceled after Shutdown's grace
	cancel  context.CancelFunc
	streams context.Context // SSE streams; canceled when Shutdown starts
	endSSE  context.CancelFunc
	started time.Time
	conns   *share.Counter // connections: http.max_conns, per address http.max_conns_per_addr
	reserve *share.Counter // past conns: the public documents only (nil: no reserve)
	serving atomic.Bool    // Serve runs the app on a listener of its own (else it is mounted)
}

// New builds the app. cards and metrics may be nil (routes then answer 404).
func New(cfg Config, engine *jsonrpc.Engine, cards CardSource, metrics http.Handler) *Server {
	cfg = cfg.withDefaults()
	base, cancel := context.WithCancel(context.Background()) //nolint:contextcheck // server lifetime, ended by Shutdown
	s := &Server{cfg: cfg, engine: engine, cards: cards, base: base, cancel: cancel, started: time.Now()}
	s.streams, s.endSSE = context.WithCancel(base)
	s.conns, s.reserve = connCounters(cfg)
	// The listener counts connections (conns.go); fasthttp's own cap (a
	// bare 503 for everything, /health included) only backs it up.
	concurrency := 2 * (cfg.HTTP.MaxConns + max(cfg.HTTP.ReservedConns, 0))
	s.app = fiber.New(fiber.Config{
		AppName:               "skillhost",
		BodyLimit:             int(cfg.HTTP.BodyLimit),
		ReadTimeout:           cfg.HTTP.ReadTimeout,
		WriteTimeout:          cfg.HTTP.WriteTimeout,
		IdleTimeout:           cfg.HTTP.IdleTimeout,
		Concurrency:           concurrency,
		DisableStartupMessage: true,
		ErrorHandler:          s.errorHandler,
	})
	s.app.Use(s.access)
	s.app.Use(recover.New(recover.Config{EnableStackTrace: true, StackTraceHandler: func(c *fiber.Ctx, e any) {
		cfg.Logger.Error("http handler panic", "path", c.Path(), "panic", e)
	}}))
	s.app.Use(requestID)
	s.app.Use(s.reserved)
	s.app.Use(s.bodyLimit)
	s.app.Get("/health", s.health)
	s.app.Get("/.well-known/agent-card.json", s.card)
	s.app.Get("/agents/:name/.well-known/agent-card.json", s.agentCard)
	s.app.Get(JWKSPath, s.jwks)
	s.app.Post("/rpc", s.guard, s.rpc)
	s.app.Post("/agents/:name/rpc", s.guard, s.agentRPC)
	s.app.Post("/events", s.guard, s.events)
	if cfg.Events != nil {
		s.app.Get("/events", s.guard, s.subscribe)
	}
	if cfg.REST != nil {
		s.app.All(cfg.RESTPath+"/*", s.guard, s.rest)
	}
	if cfg.MCP != nil {
		for _, m := range []string{fiber.MethodPost, fiber.MethodGet, fiber.MethodDelete} {
			s.app.Add(m, "/mcp", s.guard, s.mcp)
		}
	}
	if metrics != nil {
		s.app.Get("/metrics", s.guard, s.metricsScope, adaptor.HTTPHandler(metrics))
	}
	s.routeAdmin()
	if cfg.HTTP.Pprof {
		// Same access as /metrics. The command line is not served: it may
		// carry credentials (a NATS URL with a password).
		s.app.Use("/debug/pprof", s.guard, s.metricsScope, func(c *fiber.Ctx) error {
			if strings.TrimSuffix(c.Path(), "/") == "/debug/pprof/cmdline" {
				return fiber.ErrNotFound
			}
			return c.Next()
		}, pprof.New())
	}
	return s
}

// Serve accepts connections on ln until Shutdown, over TLS when
// Config.TLS is set.
func (s *Server) Serve(ln net.Listener) error {
	s.serving.Store(true)
	s.trust(ln.Addr())
	ln = &countingListener{Listener: ln, conns: s.conns, reserve: s.reserve, plain: s.cfg.TLS == nil}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(sniffListener{ln}, s.cfg.TLS)
	}
	err := s.app.Listener(ln)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections, ends open SSE streams (a stream
// can last as long as its task, so waiting for it would use the whole grace
// period), waits for in-flight requests until ctx ends, then cancels
// whatever still runs.
func (s *Server) Shutdown(ctx context.Context) error {
	s.endSSE()
	var err error
	if s.serving.Load() {
		err = s.app.ShutdownWithContext(ctx)
	}
	s.cancel()
	return err
}

// App exposes the Fiber app for tests (app.Test).
func (s *Server) App() *fiber.App { return s.app }

// Handler runs the app on a request of another Fiber app (app.Use, after
// that app's own routes), instead of Serve: addr is where that app listens
// (the Host and Origin values accepted are its, as Serve's listener's would
// be). The app answers every request it is given, with its own
// middleware, credentials and error bodies (404 for a path it does not
// serve). The other app's server reads the request, so its timeouts and
// connection limits apply (MaxConns, MaxConnsPerAddr and ReservedConns
// count a listener's connections: they apply only under Serve); BodyLimit
// is checked again here. Shutdown then ends streams and requests, not the
// app.
func (s *Server) Handler(addr net.Addr) func(*fiber.Ctx) error {
	s.trust(addr)
	serve := s.app.Handler()
	return func(c *fiber.Ctx) error {
		serve(c.Context())
		return nil
	}
}

// bodyLimit refuses a body over BodyLimit: the HTTP server has already
// done so when it is this app's own (Serve), not when another app's server
// read the request (Handler).
func (s *Server) bodyLimit(c *fiber.Ctx) error {
	if len(c.Request().Body()) > int(s.cfg.HTTP.BodyLimit) {
		return fiber.ErrRequestEntityTooLarge
	}
	return c.Next()
}

func (s *Server) health(c *fiber.Ctx) error {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready.Ready(); err != nil {
			return c.Status(fiber.StatusServiceUnavailable).JSON(fiber.Map{
				"status":    "unhealthy",
				"error":     err.Error(),
				"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
				"version":   s.cfg.Version,
			})
		}
	}
	return c.JSON(fiber.Map{
		"status":         "healthy",
		"timestamp":      time.Now().UTC().Format(time.RFC3339Nano),
		"version":        s.cfg.Version,
		"uptime_seconds": int64(time.Since(s.started).Seconds()),
	})
}

func (s *Server) card(c *fiber.Ctx) error {
	if s.cards == nil {
		return fiber.ErrNotFound
	}
	body, etag, err := s.cards.Card(c.UserContext())
	if err != nil {
		return err
	}
	return sendCard(c, body, etag)
}

func (s *Server) agentCard(c *fiber.Ctx) error {
	if s.cards == nil {
		return fiber.ErrNotFound
	}
	body, etag, err := s.cards.AgentCard(c.UserContext(), c.Params("name"))
	if err != nil {
		return s.sendError(c, err)
	}
	return sendCard(c, body, etag)
}

// JWKSPath serves the host's public signing keys (identity.JWKSPath).
const JWKSPath = "/.well-known/jwks.json"

func (s *Server) jwks(c *fiber.Ctx) error {
	if s.cfg.JWKS == nil {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderContentType, "application/jwk-set+json")
	return c.Send(s.cfg.JWKS)
}

func sendCard(c *fiber.Ctx, body []byte, etag string) error {
	c.Set(fiber.HeaderCacheControl, "public, max-age=60")
	if etag != "" {
		c.Set(fiber.HeaderETag, etag)
		if etagMatches(c.Get(fiber.HeaderIfNoneMatch), etag) {
			return c.SendStatus(fiber.StatusNotModified)
		}
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}

// etagMatches is the weak comparison of If-None-Match (RFC 9110 §13.1.2):
// "*", or any listed tag equal to etag once W/ prefixes are dropped.
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	if strings.TrimSpace(header) == "*" {
		return true
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, tag := range strings.Split(header, ",") {
		if strings.TrimPrefix(strings.TrimSpace(tag), "W/") == want {
			return true
		}
	}
	return false
}

// metricsScope lets principals whose scopes grant the pseudo-method
// "metrics" read /metrics (and /debug/pprof when it is on).
func (s *Server) metricsScope(c *fiber.Ctx) error {
	p := principalOf(c)
	if err := p.AllowMethod(auth.MetricsPseudoMethod, ""); err != nil {
		return s.refuse(c, err, p.KeyID())
	}
	return c.Next()
}

// principalOf is the principal guard attached (the zero principal if none).
func principalOf(c *fiber.Ctx) auth.Principal {
	if p, ok := c.Locals(principalLocal).(*auth.Principal); ok {
		return *p
	}
	return auth.Principal{}
}

// errorHandler turns every error Fiber or a handler returns into a response:
// a *fault.Error, and on /rpc, /events and the HTTP+JSON binding any error,
// as an error body (sendError) with the fault's HTTP status (413
// body_too_large, 400 invalid_request for Fiber's other refusals of a
// request, 500 internal); plain JSON with Fiber's status elsewhere (an
// unknown route's 404).
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	var fe *fiber.Error
	status := fiber.StatusInternalServerError
	if errors.As(err, &fe) {
		status = fe.Code
	}
	var flt *fault.Error
	switch {
	case errors.As(err, &flt):
		err = s.sendError(c, flt)
	case c.Path() == "/rpc" || c.Path() == "/events" || isAgentRPC(c.Path()) || s.isREST(c.Path()):
		rpcErr := fault.Wrap(fault.Internal, fault.ReasonInternal, err, "internal error")
		switch {
		case status == fiber.StatusRequestEntityTooLarge:
			rpcErr = fault.Newf(fault.InvalidRequest, fault.ReasonBodyTooLarge, "request body exceeds %d bytes", s.cfg.HTTP.BodyLimit)
		case status >= 400 && status < 500:
			rpcErr = fault.Wrap(fault.InvalidRequest, fault.ReasonInvalidRequest, err, "")
		default:
			s.cfg.Logger.Error("http request failed", "path", c.Path(), "err", err)
		}
		err = s.sendError(c, rpcErr)
	default:
		err = c.Status(status).JSON(fiber.Map{"error": err.Error()})
	}
	if _, ok := c.Locals(accessStartLocal).(bool); !ok {
		// The HTTP server refused the request before routing it (body
		// over the limit, read timeout, oversized headers): the access
		// middleware never saw it.
		s.report(c, 0)
	}
	return err
}

// mcp serves /mcp with Config.MCP (the MCP SDK's Streamable HTTP handler)
// to principals allowed the pseudo-method "mcp" (every key; not a session
// token, whose calls are bound to its session).
func (s *Server) mcp(c *fiber.Ctx) error {
	p := principalOf(c)
	if err := p.AllowMethod(auth.MCPPseudoMethod, ""); err != nil {
		return s.refuse(c, err, p.KeyID())
	}
	ctx, done := s.requestContext(c)
	return s.serveNetHTTP(c, ctx, done, s.cfg.MCP)
}

// isAgentRPC reports whether path is an agent's JSON-RPC endpoint.
func isAgentRPC(path string) bool {
	return strings.HasPrefix(path, "/agents/") && strings.HasSuffix(path, "/rpc")
}

// isREST reports whether path is a route of the A2A HTTP+JSON binding.
func (s *Server) isREST(path string) bool {
	return s.cfg.REST != nil && strings.HasPrefix(path, s.cfg.RESTPath+"/")
}

// sendError answers a request refused before (or outside) JSON-RPC with the
// error's HTTP status (fault's table) and its body in the route's protocol:
// a google.rpc.Status on the HTTP+JSON binding's routes (what its clients
// decode), a JSON-RPC error object elsewhere.
func (s *Server) sendError(c *fiber.Ctx, err error) error {
	fe, hidden := fault.Safe(err)
	if hidden {
		s.cfg.Logger.Error("http request failed", "path", c.Path(), "err", err)
	}
	return s.sendErrorStatus(c, fe.HTTPStatus(), nil, fe)
}

// sendRPCError answers JSON-RPC request id (nil = null) with an error, as a
// JSON-RPC response: HTTP 200 unless the error refuses the caller
// (Error.RPCStatus).
func (s *Server) sendRPCError(c *fiber.Ctx, id json.RawMessage, err error) error {
	fe, _ := fault.Safe(err)
	return s.sendErrorStatus(c, fe.RPCStatus(), id, fe)
}

func (s *Server) sendErrorStatus(c *fiber.Ctx, status int, id json.RawMessage, fe *fault.Error) error {
	ctx := jsonrpc.WithTransport(c.UserContext(), s.transportInfo(c))
	c.Locals(refusalLocal, fe)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	if s.isREST(c.Path()) {
		return c.Status(status).Send(fe.MarshalStatus(jsonrpc.ErrorMeta(ctx)))
	}
	return c.Status(status).Send(jsonrpc.EncodeError(ctx, id, jsonrpc.Envelope{}, fe))
}

func (s *Server) transportInfo(c *fiber.Ctx) jsonrpc.TransportInfo {
	id := ensureRequestID(c)
	// Copy the headers: Fiber reuses its buffers once the handler returns,
	// and handlers may keep working (streams, tasks) after that.
	header := copyHeaders(&c.Request().Header)
	return jsonrpc.TransportInfo{
		Name:       "http",
		RequestID:  id,
		Header:     header.get,
		RemoteAddr: remoteOf(c),
	}
}
