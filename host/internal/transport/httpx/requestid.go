package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/gofiber/fiber/v2"
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
	id := strings.Clone(c.Get(fiber.HeaderXRequestID))
	if !saneID(id) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		var s [len("req_") + 2*len(b)]byte // one allocation: the string
		copy(s[:], "req_")
		hex.Encode(s[len("req_"):], b[:])
		id = string(s[:])
	}
	c.Locals("request_id", id)
	c.Set(fiber.HeaderXRequestID, id)
	return id
}

func saneID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if r < 0x21 || r > 0x7e {
			return false
		}
	}
	return true
}
