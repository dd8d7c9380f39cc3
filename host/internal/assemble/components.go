package assemble

import "context"

// Purpose is what a command builds the root for: it selects the components.
type Purpose uint8

// The purposes, one per command that builds a host or part of one.
const (
	// Serve is `skillhost serve` (host.New): every component, the store
	// under cfg.Data or cfg.NATS.
	Serve Purpose = 1 << iota
	// Card is `skillhost card` (host.Card): the plugins and the cards a
	// Serve root would publish; no store, no listener, nothing served.
	Card
	// Test is `skillhost plugin test`: a throwaway store in a temporary
	// folder that Close removes (cfg.NATS when set), the runtime and the
	// registry.
	Test
	// Validate is `skillhost plugin validate` (and the benchmarks): the
	// runtime and the registry; no store (the context host functions
	// answer "unavailable").
	Validate
	// Publish is `skillhost plugin publish|unpublish`: the store, connected
	// to cfg.NATS, and nothing else.
	Publish
)

// plugins are the purposes that run plugins.
const plugins = Serve | Card | Test | Validate

// component is one part of the root: provision builds it from its section
// of the configuration and the parts before it, and registers what takes
// it apart (onClose, background).
type component struct {
	name      string
	in        Purpose
	provision func(h *Root, ctx context.Context) error
}

// components are the parts of a host in build order; Close takes them
// apart in reverse. The comment names each one's configuration section.
var components = []component{
	{"keys", Serve | Card, (*Root).provisionKeys},             // auth.keys
	{"tls", Serve, (*Root).provisionTLS},                      // http.tls
	{"listener", Serve, (*Root).provisionListener},            // listen: first of what serves, so a port in use fails at once
	{"grpc listener", Serve, (*Root).provisionGRPCListener},   // grpc.listen: bound with HTTP's, before the cards name its port
	{"tracing", Serve, (*Root).provisionTracing},              // tracing.*
	{"metrics", Serve, (*Root).provisionMetrics},              // the metrics, the failure ring, the call guard (rpc.max_running_calls)
	{"store", Serve | Test | Publish, (*Root).provisionStore}, // store.*, nats, data
	{"runtime", plugins, (*Root).provisionRuntime},            // sandbox.*
	{"peers", plugins, (*Root).provisionPeers},                // agents.remote
	{"registry", plugins, (*Root).provisionRegistry},          // policy.*, trust.*, net.*, plugins.<name>; the router (agents.*)
	{"admin", Serve, (*Root).provisionAdmin},                  // the /admin documents over the registry and runtime
	{"identity", Serve | Card, (*Root).provisionIdentity},     // identity.key_file
	{"plugins", Serve | Card, (*Root).provisionPlugins},       // plugins (the folder, or Spec.Plugins)
	{"reload", Serve, (*Root).provisionReload},                // hot_reload
	{"published", Serve, (*Root).provisionPublished},          // published_plugins (cluster mode)
	{"oci", Serve, (*Root).provisionOCI},                      // sources.oci
	{"engine", Serve, (*Root).provisionEngine},                // rpc.*, log.access; authorization
	{"events", Serve, (*Root).provisionEvents},                // events.*
	{"rpc", Serve, (*Root).provisionRPC},                      // _cleveragents/*: sessions, context, agent/call, agent/notify
	{"delivery", Serve, (*Root).provisionDelivery},            // delivery.*, a2a.push.max_pending
	{"cards", Serve | Card, (*Root).provisionCards},           // public_url, stdio; the Agent Cards
	{"a2a", Serve, (*Root).provisionA2A},                      // a2a.*
	{"plans", Serve, (*Root).provisionPlans},                  // plans.*
	{"mcp", Serve, (*Root).provisionMCP},                      // mcp.*
	{"grpc", Serve, (*Root).provisionGRPC},                    // grpc.*: the A2A gRPC binding over the engine and the tasks
	{"http", Serve, (*Root).provisionHTTP},                    // http.*
}
