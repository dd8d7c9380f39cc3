package httpx

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// rpc serves POST /rpc: one JSON-RPC request or batch. JSON-RPC errors are
// HTTP 200; a body of only notifications gets 204; a streaming result is
// sent as Server-Sent Events. The call runs with the request's context,
// canceled when the client goes away.
func (s *Server) rpc(c *fiber.Ctx) error {
	return s.serveRPC(c, s.transportInfo(c))
}

// agentRPC serves POST /agents/{name}/rpc: /rpc restricted to one agent
// (plugin): only the methods of Config.AgentMethods, routed to its skills.
func (s *Server) agentRPC(c *fiber.Ctx) error {
	info := s.transportInfo(c)
	info.Agent = strings.Clone(c.Params("name")) // outlives Fiber's buffer
	info.Allow = s.cfg.AgentMethods
	if info.Allow == nil {
		info.Allow = func(string) bool { return false }
	}
	return s.serveRPC(c, info)
}

func (s *Server) serveRPC(c *fiber.Ctx, info jsonrpc.TransportInfo) error {
	ctx, done := s.requestContextWith(c, info)
	body := bytes.Clone(c.Body()) // handlers may outlive Fiber's buffer
	c.Locals(rpcLocal, true)
	reply := s.engine.Handle(ctx, body)
	if reply.Streaming() {
		return s.stream(c, ctx, done, reply)
	}
	done()
	if reply.Body == nil {
		return c.SendStatus(fiber.StatusNoContent)
	}
	status := s.replyStatus(c, reply.Err)
	if reply.ErrorEvent && status == fiber.StatusOK {
		// A v0.3 streaming method: its clients read only SSE, so the
		// error is the stream's one event.
		defer reply.Done()
		setSSEHeaders(c)
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		if err := writeEvent(w, reply.Body); err != nil {
			return err
		}
		return c.Send(buf.Bytes())
	}
	sendReply(c, status, reply)
	return nil
}

// sendReply sends reply's Body as JSON with status. The engine's response budget holds
// the bytes until Fiber has written them (or given up on the client): the
// body goes out as a sized stream that tells the engine when it is closed.
func sendReply(c *fiber.Ctx, status int, reply jsonrpc.Reply) {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Status(status)
	rb := replyBodies.Get().(*replyBody)
	rb.Reset(reply.Body)
	rb.reply = reply
	c.Context().SetBodyStream(rb, len(reply.Body))
}

// replyBody is a reply's body; fasthttp closes it (once) when it is
// written or dropped. Pooled: a response costs no allocation for it.
type replyBody struct {
	bytes.Reader
	reply jsonrpc.Reply
}

var replyBodies = sync.Pool{New: func() any { return new(replyBody) }}

func (r *replyBody) Close() error {
	reply := r.reply
	r.reply = jsonrpc.Reply{}
	r.Reset(nil)
	replyBodies.Put(r)
	reply.Done()
	return nil
}

// replyStatus is the HTTP status of a JSON-RPC reply (fault's
// Error.RPCStatus): 200, except that a single request refused for its
// credentials, its scopes, a rate limit or its key's quota (key_quota: a
// share of the host it already holds) gets 401, 403 or 429, with
// WWW-Authenticate or Retry-After. Batches are always 200: each element
// carries its own error.
func (s *Server) replyStatus(c *fiber.Ctx, err *fault.Error) int {
	if err == nil {
		return fiber.StatusOK
	}
	switch {
	case err.Kind == fault.Unauthorized:
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="skillhost", error="invalid_token"`)
	case err.WireReason() == fault.ReasonRateLimited:
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(auth.RetryAfterSeconds(auth.RetryAfter(err))))
	}
	return err.RPCStatus()
}

// events serves POST /events: notifications only (a request carrying an id
// is refused, since no response would reach its sender here).
func (s *Server) events(c *fiber.Ctx) error {
	body := bytes.Clone(c.Body())
	if id, ok := firstID(body); ok {
		err := fault.New(fault.InvalidRequest, fault.ReasonInvalidRequest, "POST /events accepts notifications only (no id); send requests to /rpc")
		return s.sendRPCError(c, id, err)
	}
	ctx, done := s.requestContext(c)
	c.Locals(rpcLocal, true)
	reply := s.engine.Handle(ctx, body)
	done()
	if reply.Body != nil { // malformed input: the engine answered with an error
		sendReply(c, fiber.StatusOK, reply)
		return nil
	}
	return c.SendStatus(fiber.StatusAccepted)
}

// firstID reports whether a request (or any batch element) has an id
// member, and returns it for a single request (nil, i.e. null, for a
// batch). Bodies that do not decode are left to the engine.
func firstID(body []byte) (json.RawMessage, bool) {
	var one map[string]json.RawMessage
	if json.Unmarshal(body, &one) == nil {
		id, ok := one["id"]
		if ok && !validID(id) {
			id = nil
		}
		return id, ok
	}
	var many []map[string]json.RawMessage
	if json.Unmarshal(body, &many) == nil {
		for _, m := range many {
			if _, ok := m["id"]; ok {
				return nil, true
			}
		}
	}
	return nil, false
}

// validID reports whether id is a string, a number or null (others are
// answered with a null id).
func validID(id json.RawMessage) bool {
	t := bytes.TrimSpace(id)
	return len(t) > 0 && (t[0] == '"' || t[0] == '-' || (t[0] >= '0' && t[0] <= '9') || string(t) == "null")
}

// stream writes a streaming reply as SSE: one `data:` line per JSON-RPC
// response, keep-alive comments while idle, until the stream ends, the
// client goes away (ctx ends) or Shutdown starts. done releases ctx.
func (s *Server) stream(c *fiber.Ctx, ctx context.Context, done func(), reply jsonrpc.Reply) error {
	setSSEHeaders(c)
	ctx, cancel := context.WithCancel(ctx)
	stopOnShutdown := context.AfterFunc(s.streams, cancel) // a stream may last as long as its task
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer done()
		defer stopOnShutdown()
		defer cancel()
		_ = reply.Pump(ctx, func(msg []byte) error { return writeEvent(w, msg) },
			jsonrpc.KeepAlive(s.cfg.KeepAlive, func() error {
				if _, err := w.WriteString(": keep-alive\n\n"); err != nil {
					return err
				}
				return w.Flush()
			}))
	})
	return nil
}

func setSSEHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set("X-Accel-Buffering", "no")
	c.Status(fiber.StatusOK)
}

func writeEvent(w *bufio.Writer, msg []byte) error {
	if _, err := w.WriteString("data: "); err != nil {
		return err
	}
	if _, err := w.Write(msg); err != nil {
		return err
	}
	if _, err := w.WriteString("\n\n"); err != nil {
		return err
	}
	return w.Flush()
}
