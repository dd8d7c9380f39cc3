package agentcard

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/a2a/v03"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// Extension URIs and bindings the card advertises.
const (
	// ExtCleverAgents declares the _cleveragents/* JSON-RPC methods served on /rpc.
	ExtCleverAgents = "https://skillhost.dev/ext/cleveragents/v1"
	// ExtLimits publishes each skill's effective sandbox limits.
	ExtLimits = "https://skillhost.dev/ext/limits/v1"
	// BindingStdio is the protocol binding of the stdio transport
	// (`<byte-length>\n<json>` frames, same method table as /rpc).
	BindingStdio = "https://skillhost.dev/bindings/stdio-jsonrpc"
	// StdioURL is the interface URL of the stdio binding.
	StdioURL = "stdio:"
	// RPCPath is the JSON-RPC endpoint path under the base URL.
	RPCPath = "/rpc"
	// RESTPath is the base path of the HTTP+JSON binding's routes
	// (/a2a/message:send, /a2a/tasks/{id}, …; /a2a/{tenant}/… for one plugin).
	RESTPath = "/a2a"
	// WellKnownPath is the host card's path.
	WellKnownPath = "/.well-known/agent-card.json"
	// AgentCardPathPrefix prefixes a plugin's card path: /agents/{name}/.well-known/agent-card.json.
	AgentCardPathPrefix = "/agents/"
)

// DefaultAgentName is the host card's name when none is configured; task
// provenance is signed in this name.
const DefaultAgentName = "skillhost"

// Protocol versions served.
const (
	Version10 = "1.0"
	Version03 = "0.3"
)

// CleverAgentsMethods are the spec-001 methods declared by the cleveragents extension.
var CleverAgentsMethods = []string{
	"_cleveragents/session/create", "_cleveragents/session/close",
	"_cleveragents/context/set", "_cleveragents/context/get",
	"_cleveragents/skill/execute", "_cleveragents/agent/call", "_cleveragents/agent/notify",
	"_cleveragents/plan/create", "_cleveragents/plan/execute", "_cleveragents/plan/status", "_cleveragents/plan/cancel",
	"_cleveragents/plan/list", "_cleveragents/plan/verify", "_cleveragents/task/verify",
}

// Media types every skill accepts and produces.
var (
	InputModes  = []string{"application/json", "text/plain"}
	OutputModes = []string{"application/json", "text/plain"}
)

// Config is the host-side input of card generation.
type Config struct {
	BaseURL          string // public base URL, e.g. http://127.0.0.1:8080 (no trailing slash needed)
	Name             string // host agent name; default "skillhost"
	Description      string // default "Sandboxed WebAssembly skills served over A2A"
	Version          string // the host's version (never the protocol version); default "dev"
	Organization     string // provider organization; default "skillhost"
	ProviderURL      string // provider URL; default BaseURL
	DocumentationURL string // optional
	Stdio            bool   // the stdio transport is served: advertise its binding
	GRPC             string // host:port of the gRPC binding (grpc.listen); "" = not served
	APIKeyAuth       bool   // clients authenticate with the X-API-Key header
	BearerAuth       bool   // clients authenticate with Authorization: Bearer
	Push             bool   // push notifications are served (capabilities.pushNotifications)
}

func (c Config) withDefaults() Config {
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.BaseURL == "" {
		c.BaseURL = "http://127.0.0.1:8080"
	}
	if c.Name == "" {
		c.Name = DefaultAgentName
	}
	if c.Description == "" {
		c.Description = "Sandboxed WebAssembly skills served over A2A"
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Organization == "" {
		c.Organization = "skillhost"
	}
	if c.ProviderURL == "" {
		c.ProviderURL = c.BaseURL
	}
	return c
}

// Build returns the host's v1.0 Agent Card for a registry snapshot: every
// skill of every plugin. A snapshot without skills yields a card with an
// empty skill list (the caller decides whether to serve it; Service logs
// a warning and serves it, so discovery never breaks while plugins load).
func Build(cfg Config, snap *plugin.Snapshot) *a2av1.AgentCard {
	cfg = cfg.withDefaults()
	var plugins []*plugin.Plugin
	if snap != nil {
		plugins = snap.Plugins
	}
	return buildCard(cfg, cfg.Name, cfg.Description, cfg.Version, "", plugins, nil)
}

// BuildAgent returns the card of one plugin (one agent): its skills only.
// Its JSON-RPC interfaces are AgentRPCPath(name), which serves that
// plugin's skills only (so the v0.3 card's `url` does too; they carry the
// plugin name as tenant as well), and its HTTP+JSON interface is RESTPath
// with the plugin name as tenant (/a2a/{name}/message:send, …).
func BuildAgent(cfg Config, p *plugin.Plugin) *a2av1.AgentCard {
	cfg = cfg.withDefaults()
	m := p.Manifest
	desc := m.Description
	if desc == "" {
		desc = m.Name
	}
	return buildCard(cfg, m.Name, desc, m.Version, m.Name, []*plugin.Plugin{p}, nil)
}

// AgentRPCPath is the JSON-RPC endpoint restricted to one plugin's skills.
func AgentRPCPath(name string) string {
	return AgentCardPathPrefix + name + RPCPath
}

// buildCard renders a card of plugins' skills (those keep accepts, when it
// is set), with interfaces for tenant ("" = the whole host).
func buildCard(cfg Config, name, desc, version, tenant string, plugins []*plugin.Plugin, keep func(p *plugin.Plugin, s *plugin.Skill) bool) *a2av1.AgentCard {
	rpc := cfg.BaseURL + RPCPath
	if tenant != "" {
		rpc = cfg.BaseURL + AgentRPCPath(tenant)
	}
	ifaces := []*a2av1.AgentInterface{
		{URL: rpc, ProtocolBinding: a2av1.TransportProtocolJSONRPC, ProtocolVersion: Version10, Tenant: tenant},
		{URL: cfg.BaseURL + RESTPath, ProtocolBinding: a2av1.TransportProtocolHTTPJSON, ProtocolVersion: Version10, Tenant: tenant},
	}
	if cfg.GRPC != "" { // gRPC interfaces are host:port (A2A v1.0), the plugin a tenant as on the other bindings
		ifaces = append(ifaces, &a2av1.AgentInterface{URL: cfg.GRPC, ProtocolBinding: a2av1.TransportProtocolGRPC, ProtocolVersion: Version10, Tenant: tenant})
	}
	ifaces = append(ifaces, &a2av1.AgentInterface{URL: rpc, ProtocolBinding: a2av1.TransportProtocolJSONRPC, ProtocolVersion: Version03, Tenant: tenant})
	if cfg.Stdio {
		ifaces = append(ifaces, &a2av1.AgentInterface{URL: StdioURL, ProtocolBinding: BindingStdio, ProtocolVersion: Version10, Tenant: tenant})
	}
	card := &a2av1.AgentCard{
		Name:                name,
		Description:         desc,
		Version:             version,
		SupportedInterfaces: ifaces,
		Provider:            &a2av1.AgentProvider{Org: cfg.Organization, URL: cfg.ProviderURL},
		DocumentationURL:    cfg.DocumentationURL,
		DefaultInputModes:   InputModes,
		DefaultOutputModes:  OutputModes,
		Skills:              []a2av1.AgentSkill{},
	}
	limits := map[string]any{}
	for _, p := range sortedPlugins(plugins) {
		for _, s := range p.Manifest.Skills {
			if keep != nil && !keep(p, s) {
				continue
			}
			card.Skills = append(card.Skills, Skill(p, s))
			limits[s.ID] = map[string]any{
				"plugin":       p.Manifest.Name,
				"timeout_ms":   p.Limits.Timeout.Milliseconds(),
				"memory_bytes": p.Limits.MemoryBytes,
				"output_bytes": p.Limits.OutputBytes,
				"concurrency":  p.Limits.Concurrency,
			}
		}
	}
	card.Capabilities = a2av1.AgentCapabilities{
		Streaming:         true,
		PushNotifications: cfg.Push,
		Extensions: []a2av1.AgentExtension{
			{URI: ExtCleverAgents, Description: "skillhost's _cleveragents/* JSON-RPC dialect (sessions, context, skill/execute, agent/call, plans) on the same endpoint",
				Params: map[string]any{"methods": anySlice(CleverAgentsMethods)}},
			{URI: ExtLimits, Description: "effective sandbox limits of every skill (per-call timeout, linear memory cap, output cap, parallel instances)",
				Params: map[string]any{"skills": limits}},
		},
	}
	addSecurity(cfg, card)
	return card
}

// anySlice is ss as []any: extension params hold JSON values only, which
// the protobuf card of the gRPC binding (structpb) requires.
func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func sortedPlugins(in []*plugin.Plugin) []*plugin.Plugin {
	out := make([]*plugin.Plugin, 0, len(in))
	for _, p := range in {
		if p != nil && p.Manifest != nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Manifest.Name < out[j].Manifest.Name })
	return out
}

// Skill is skill s of plugin p as the Agent Card lists it (name and
// description defaulted); the MCP tools are generated from it too.
func Skill(p *plugin.Plugin, s *plugin.Skill) a2av1.AgentSkill {
	out := a2av1.AgentSkill{
		ID:          s.ID,
		Name:        s.Name,
		Description: s.Description,
		Tags:        append([]string{}, s.Tags...),
		InputModes:  s.InputModes,
		OutputModes: s.OutputModes,
	}
	if out.Name == "" {
		out.Name = s.ID
	}
	if out.Description == "" {
		out.Description = fmt.Sprintf("%s (plugin %s)", out.Name, p.Manifest.Name)
	}
	if len(out.Tags) == 0 { // tags are REQUIRED (and a2a-go's protobuf card refuses none): the plugin's name
		out.Tags = []string{p.Manifest.Name}
	}
	if len(out.InputModes) == 0 {
		out.InputModes = InputModes
	}
	if len(out.OutputModes) == 0 {
		out.OutputModes = OutputModes
	}
	for _, ex := range s.Examples {
		out.Examples = append(out.Examples, string(ex.Input))
	}
	return out
}

func addSecurity(cfg Config, card *a2av1.AgentCard) {
	if !cfg.APIKeyAuth && !cfg.BearerAuth {
		return
	}
	card.SecuritySchemes = a2av1.NamedSecuritySchemes{}
	if cfg.APIKeyAuth {
		card.SecuritySchemes["apiKey"] = a2av1.APIKeySecurityScheme{Location: a2av1.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key",
			Description: "an API key of the host (auth.keys), or a session token from _cleveragents/session/create"}
		card.SecurityRequirements = append(card.SecurityRequirements, a2av1.SecurityRequirements{"apiKey": {}})
	}
	if cfg.BearerAuth {
		card.SecuritySchemes["bearer"] = a2av1.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "Authorization: Bearer <API key or session token>"}
		card.SecurityRequirements = append(card.SecurityRequirements, a2av1.SecurityRequirements{"bearer": {}})
	}
}

// MarshalUnion encodes card as the union of the v1.0 and v0.3 shapes (top-level
// url, preferredTransport, protocolVersion, additionalInterfaces beside
// supportedInterfaces), exactly as a2a-go's a2av0 card producer serves it
// (v03.Union), with each security scheme in both forms and the v1.0
// securityRequirements (see MarshalV1).
func MarshalUnion(ctx context.Context, card *a2av1.AgentCard) ([]byte, error) {
	var reqs json.RawMessage
	if len(card.SecuritySchemes) > 0 {
		var err error
		if reqs, err = requirementsJSON(card.SecurityRequirements); err != nil {
			return nil, err
		}
	}
	return v03.Union(ctx, card, reqs)
}

// MarshalV1 encodes card in the pure v1.0 shape.
func MarshalV1(card *a2av1.AgentCard) ([]byte, error) {
	b, err := json.Marshal(card)
	if err != nil {
		return nil, fmt.Errorf("encode card: %w", err)
	}
	if len(card.SecurityRequirements) == 0 {
		return b, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("decode card: %w", err)
	}
	if top["securityRequirements"], err = requirementsJSON(card.SecurityRequirements); err != nil {
		return nil, err
	}
	if b, err = json.Marshal(top); err != nil {
		return nil, fmt.Errorf("encode card: %w", err)
	}
	return b, nil
}

// requirementsJSON encodes security requirements as the v1.0 schema (the
// proto JSON) has them: [{"schemes": {"<name>": {"list": [scopes…]}}}],
// with an empty scope list as {} (proto JSON omits empty repeated fields).
// a2a-go v2.3.1 writes (and parses) the scopes as a bare array instead; a
// client built on it reads the card once the member is dropped, falling
// back to the v0.3 "security" member (README "A2A").
func requirementsJSON(reqs a2av1.SecurityRequirementsOptions) (json.RawMessage, error) {
	type stringList struct {
		List []string `json:"list,omitempty"`
	}
	type requirement struct {
		Schemes map[a2av1.SecuritySchemeName]stringList `json:"schemes"`
	}
	out := make([]requirement, 0, len(reqs))
	for _, r := range reqs {
		req := requirement{Schemes: map[a2av1.SecuritySchemeName]stringList{}}
		for name, scopes := range r {
			req.Schemes[name] = stringList{List: scopes}
		}
		out = append(out, req)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("encode security requirements: %w", err)
	}
	return b, nil
}
