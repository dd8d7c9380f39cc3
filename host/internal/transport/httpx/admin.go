package httpx

import (
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// routeAdmin adds GET /admin/:doc and the dashboard under /ui/.
func (s *Server) routeAdmin() {
	if s.cfg.Admin != nil {
		s.app.Get("/admin/:doc", s.guard, s.adminScope, s.adminDoc)
	}
	if s.cfg.UI != nil {
		s.app.Use("/ui", s.uiGuard, uiHeaders, filesystem.New(filesystem.Config{
			Root: http.FS(s.cfg.UI), Index: "index.html", MaxAge: 0,
		}))
	}
}

// adminScope lets principals whose scopes grant the pseudo-method "admin"
// read the admin documents.
func (s *Server) adminScope(c *fiber.Ctx) error {
	p := principalOf(c)
	if err := p.AllowMethod(auth.AdminPseudoMethod, ""); err != nil {
		return s.refuse(c, err, p.KeyID())
	}
	return c.Next()
}

func (s *Server) adminDoc(c *fiber.Ctx) error {
	doc, ok := s.cfg.Admin.AdminDoc(c.UserContext(), c.Params("doc"))
	if !ok {
		return fiber.ErrNotFound
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(doc)
}

// uiGuard applies /rpc's rules to the dashboard's files on a host without
// keys (loopback clients, Host and Origin checks). With keys the files are
// served to anyone: they hold no data, and the page asks for a key to read
// the guarded documents.
func (s *Server) uiGuard(c *fiber.Ctx) error {
	if s.cfg.Auth.Enabled() {
		return c.Next()
	}
	return s.guard(c)
}

// uiCSP lets the dashboard load only its own files and talk only to its
// own host.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func uiHeaders(c *fiber.Ctx) error {
	c.Set("Content-Security-Policy", uiCSP)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderXFrameOptions, "DENY")
	c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Next()
}
