package httpx

import (
	"mime"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

// principalLocal is the Fiber local holding a request's *auth.Principal.
const principalLocal = "principal"

// LoopbackPrincipal is the name of the local principal of loopback HTTP
// clients when no API keys are configured.
const LoopbackPrincipal = "loopback"

// guard protects a route: the Host check (loopback-only mode: DNS
// rebinding), the Origin check (cross-site requests), a JSON content type
// on state-changing methods, then authentication. The principal is left in
// c.Locals for the handler.
func (s *Server) guard(c *fiber.Ctx) error {
	if !s.cfg.Auth.Enabled() && !s.hostAllowed(string(c.Request().Host())) {
		return s.refuse(c, fault.Newf(fault.Forbidden, fault.ReasonHostDenied,
			"Host %q is not an address of this host; add it to http.allowed_hosts if it is", clipHeader(string(c.Request().Host()))), "")
	}
	if origin := c.Get(fiber.HeaderOrigin); origin != "" && !s.originAllowed(origin) {
		return s.refuse(c, fault.Newf(fault.Forbidden, fault.ReasonOriginDenied,
			"requests from origin %q are not accepted; add it to http.allowed_origins if it should be", clipHeader(origin)), "")
	}
	if c.Method() == fiber.MethodPost && !jsonContentType(c.Get(fiber.HeaderContentType)) {
		err := fault.New(fault.InvalidRequest, fault.ReasonMediaType, "send the body as Content-Type: application/json")
		return s.sendError(c, err)
	}
	p, err := s.authenticate(c)
	if err != nil {
		return s.refuse(c, err, "")
	}
	c.Locals(principalLocal, p)
	return c.Next()
}

// loopback is the principal of every loopback client of a host without
// keys: one value, so attaching it to a request costs no allocation.
var loopback = auth.Local(LoopbackPrincipal)

// authenticate returns the request's principal: from its credential when
// keys are configured, else the loopback principal for loopback clients.
func (s *Server) authenticate(c *fiber.Ctx) (*auth.Principal, error) {
	if !s.cfg.Auth.Enabled() {
		if !c.Context().RemoteIP().IsLoopback() {
			return nil, fault.New(fault.Forbidden, fault.ReasonLoopbackOnly,
				"this host has no API keys configured and serves loopback clients only")
		}
		return &loopback, nil
	}
	var authz []string
	c.Request().Header.VisitAll(func(k, v []byte) {
		if strings.EqualFold(string(k), fiber.HeaderAuthorization) {
			authz = append(authz, string(v))
		}
	})
	cred, err := auth.Credential(authz, c.Get("X-API-Key"))
	if err == nil && cred == "" && hasQueryCredential(c) {
		err = fault.New(fault.Unauthorized, fault.ReasonUnauthenticated,
			"credentials in the URL are not accepted (URLs end up in logs); send the Authorization or X-API-Key header")
	}
	if err == nil {
		var p auth.Principal
		if p, err = s.cfg.Auth.Authenticate(c.UserContext(), cred); err == nil {
			return &p, nil
		}
	}
	if fe := fault.From(err); fe.Kind != fault.Unauthorized {
		s.cfg.Logger.Error("authentication failed", "request_id", ensureRequestID(c), "err", err)
		return nil, fault.New(fault.Internal, fault.ReasonStoreUnavailable, "authentication is unavailable; retry")
	}
	return nil, err
}

// refuse answers a refused request with its status (fault's table: 401,
// 403, 503) and writes the audit line of every 401 and 403: key id (if
// any), remote address and request id; never the credential.
func (s *Server) refuse(c *fiber.Ctx, err error, keyID string) error {
	fe := fault.From(err)
	status := fe.HTTPStatus()
	if fe.Kind == fault.Unauthorized {
		challenge := `Bearer realm="skillhost"`
		if fe.WireReason() != fault.ReasonUnauthenticated {
			challenge += `, error="invalid_token"`
		}
		c.Set(fiber.HeaderWWWAuthenticate, challenge)
	}
	if fe.Kind == fault.Unauthorized || fe.Kind == fault.Forbidden {
		s.cfg.Logger.Warn("audit: request refused", "status", status, "reason", fe.WireReason(), "key_id", keyID,
			"remote", remoteOf(c), "request_id", ensureRequestID(c), "path", c.Path())
	}
	return s.sendError(c, fe)
}

// jsonContentType accepts application/json and any +json media type.
func jsonContentType(v string) bool {
	if v == fiber.MIMEApplicationJSON { // what nearly every client sends: no parse (a map per call)
		return true
	}
	mt, _, err := mime.ParseMediaType(v)
	return err == nil && (mt == fiber.MIMEApplicationJSON || strings.HasSuffix(mt, "+json"))
}

// hasQueryCredential reports whether the URL tries to carry a key.
func hasQueryCredential(c *fiber.Ctx) bool {
	for _, k := range []string{"api_key", "apikey", "key", "token", "access_token"} {
		if c.Query(k) != "" {
			return true
		}
	}
	return false
}

// hostAllowed checks a Host header against the listen address, the public
// URL and http.allowed_hosts (an entry without a port matches any port).
func (s *Server) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	for _, a := range s.hosts {
		if _, _, err := net.SplitHostPort(a); err == nil {
			if a == host {
				return true
			}
		} else if strings.Trim(a, "[]") == strings.Trim(name, "[]") {
			return true
		}
	}
	return false
}

func (s *Server) originAllowed(origin string) bool {
	o := strings.ToLower(origin)
	for _, a := range s.origins {
		if a == o {
			return true
		}
	}
	return false
}

// trust computes the accepted Host values and origins once the listen
// address is known: every name of the listen address (loopback names for a
// loopback or unspecified address), the public URL's, and the configured
// ones.
func (s *Server) trust(addr net.Addr) {
	scheme := "http"
	if s.cfg.TLS != nil {
		scheme = "https"
	}
	var hosts []string
	if tcp, ok := addr.(*net.TCPAddr); ok {
		port := strconv.Itoa(tcp.Port)
		hosts = append(hosts, strings.ToLower(net.JoinHostPort(tcp.IP.String(), port)))
		if tcp.IP.IsLoopback() || tcp.IP.IsUnspecified() {
			hosts = append(hosts, "localhost:"+port, "127.0.0.1:"+port, "[::1]:"+port)
		}
	}
	var origins []string
	for _, h := range hosts {
		origins = append(origins, scheme+"://"+h)
	}
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" { // a browser sends no default port in Host or Origin
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		hosts = append(hosts, strings.ToLower(u.Host), strings.ToLower(net.JoinHostPort(u.Hostname(), port)))
		origins = append(origins, strings.ToLower(u.Scheme+"://"+u.Host))
	}
	for _, h := range s.cfg.HTTP.AllowedHosts {
		hosts = append(hosts, strings.ToLower(h))
	}
	for _, o := range s.cfg.HTTP.AllowedOrigins {
		n, _ := config.NormalizeOrigin(o) // validated with the config
		origins = append(origins, n)
	}
	s.hosts, s.origins = hosts, origins
}

func clipHeader(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}
