package httpx

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// requestID takes a sane X-Request-ID from the client or makes one, and
// echoes it on the response.
func requestID(c *fiber.Ctx) error {
	ensureRequestID(c)
	return c.Next()
}

// ensureRequestID returns the request's id, assigning one on first use
// (errors raised before the middleware runs, e.g. an oversized body, get
// one too).
func ensureRequestID(c *fiber.Ctx) string {
	if id, ok := c.Locals("request_id").(string); ok {
		return id
	}
	// A copy: Fiber's strings live in buffers it reuses for the next
	// request, and the id outlives the handler (tasks, streams, logs).
	id := auth.RequestID(strings.Clone(c.Get(fiber.HeaderXRequestID)))
	c.Locals("request_id", id)
	c.Set(fiber.HeaderXRequestID, id)
	return id
}
