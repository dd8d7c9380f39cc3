package assemble

import (
	"context"
	"net"

	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/dashboard"
	"github.com/skillhost/skillhost/host/internal/events"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// provisionHTTP builds the HTTP transport (http.*) when listen is set:
// served on the listener by Serve, or mounted by the caller (NoListener).
// The share counters of every resource a client holds are gathered for
// /metrics here, once all of them exist.
func (h *Root) provisionHTTP(context.Context) error {
	if h.cfg.Listen != "" {
		h.http = httpx.New(httpx.Config{
			HTTP: h.cfg.HTTP, Version: h.version, Auth: h.authn, TLS: h.tlsCfg, PublicURL: h.publicURL(),
			Events: eventSource{events.Source{Bus: h.events, Sessions: h.Store}}, Logger: h.log, Ready: rootReadiness{h},
			Admin: h.adminDocs(), UI: dashboard.Assets, JWKS: h.jwks(), Access: httpAccessLog{metrics: h.metrics, log: h.log, on: h.cfg.Log.Access},
			AgentMethods: a2a.IsMethod, RESTPath: agentcard.RESTPath, REST: restBinding{h.rest}, MCP: h.mcp.Handler(),
		}, h.engine, h.cards, h.metrics.Handler())
		h.onClose("http", func(ctx context.Context) error {
			if h.served.Load() { // Serve's shutdown ended it
				return nil
			}
			return h.http.Shutdown(ctx) // mounted (Handler) or never served: its streams and requests end
		})
	}
	h.metrics.WatchShares(h.shareMetrics)
	return nil
}

// adminDocs are the documents of GET /admin/<name>, each built when it is
// read (httpx.AdminDocs).
type adminDocs map[string]func(context.Context) any

// AdminDoc implements httpx.AdminDocs.
func (d adminDocs) AdminDoc(ctx context.Context, name string) (any, bool) {
	doc, ok := d[name]
	if !ok {
		return nil, false
	}
	return doc(ctx), true
}

// adminDocs are the documents of GET /admin/<name>.
func (h *Root) adminDocs() adminDocs {
	return adminDocs{
		"status":   func(context.Context) any { return h.admin.Status() },
		"plugins":  func(context.Context) any { return h.admin.Plugins() },
		"pool":     func(context.Context) any { return h.admin.Pool() },
		"failures": func(context.Context) any { return h.admin.Failures() },
		"history":  func(context.Context) any { return h.admin.History() },
		"shares":   h.sharesDoc,
	}
}

// warnWildcard warns when the host listens on every interface without a
// public_url: the Agent Card would publish the wildcard address, which no
// client can reach.
func (h *Root) warnWildcard() {
	host, _, err := net.SplitHostPort(h.cfg.Listen)
	if err != nil || h.cfg.PublicURL != "" {
		return
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		h.log.Warn("listening on every interface without public_url: the Agent Card publishes "+h.publicURL()+
			", which clients cannot reach; set public_url to the URL they use", "listen", h.cfg.Listen)
	}
}
