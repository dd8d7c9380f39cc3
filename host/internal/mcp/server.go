package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/share"
)

// ContextPrefix prefixes the A2A context of an MCP session's tool calls.
const ContextPrefix = "mcp-"

// stdioContext is the A2A context of the stdio session (one client).
const stdioContext = ContextPrefix + "stdio"

// Invoker runs a JSON-RPC method; *jsonrpc.Engine implements it.
type Invoker interface {
	Invoke(ctx context.Context, method string, params json.RawMessage) (any, error)
}

// Config configures New.
type Config struct {
	// MCP is the mcp.* section: max_sessions caps the MCP sessions open
	// over HTTP on this host, max_sessions_per_key those of one key (0: no
	// per-key share). Optional: the zero section is config.Defaults().MCP.
	config.MCP
	Invoker  Invoker                 // the engine the A2A methods are registered on
	Snapshot func() *plugin.Snapshot // the registry's current snapshot
	Version  string                  // reported as the server's version
	Logger   *slog.Logger
}

// Server is the MCP server of a host. It is safe for concurrent use.
type Server struct {
	cfg      Config
	srv      *sdk.Server
	log      *slog.Logger
	sessions *share.Counter // MCP sessions over HTTP

	mu      sync.Mutex
	tools   map[string]string // name → the definition's JSON, to add only what changed
	plugins map[string]string // tool name → its plugin, for the caller's agent: scopes
}

// New returns a Server listing the snapshot's skills as tools. Call Update
// on every registry change (plugin.Registry.OnChange).
func New(cfg Config) *Server {
	if cfg.MCP == (config.MCP{}) {
		cfg.MCP = config.Defaults().MCP
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, tools: map[string]string{}, plugins: map[string]string{}, sessions: newSessionCounter(cfg)}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "skillhost", Title: "skillhost", Version: cfg.Version},
		&sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}, Logger: cfg.Logger,
			Instructions: "Each tool is a sandboxed WebAssembly skill; its input is the skill's JSON input."})
	s.srv.AddReceivingMiddleware(s.listInScope)
	s.Update(cfg.Snapshot())
	return s
}

// listInScope filters tools/list to the tools the caller may call (its
// skill: and agent: scopes, as the extended Agent Card is): a key sees
// only what it can run.
func (s *Server) listInScope(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*sdk.ListToolsResult)
		if err != nil || method != "tools/list" || !ok {
			return res, err
		}
		who := auth.From(ctx)
		s.mu.Lock()
		kept := list.Tools[:0:0]
		for _, t := range list.Tools {
			if who.AllowSkill(s.plugins[t.Name], t.Name) == nil {
				kept = append(kept, t)
			}
		}
		s.mu.Unlock()
		list.Tools = kept
		return list, nil
	}
}

// Update makes the tool list the snapshot's skills: new and changed tools
// are added, removed ones dropped; the SDK notifies the connected clients.
func (s *Server) Update(snap *plugin.Snapshot) {
	want, owners := map[string]*sdk.Tool{}, map[string]string{}
	if snap != nil {
		for _, p := range snap.Plugins {
			if p == nil || p.Manifest == nil {
				continue
			}
			for _, sk := range p.Manifest.Skills {
				t, err := Tool(p, sk)
				if err != nil {
					s.log.Warn("mcp: skill not offered as a tool", "skill", sk.ID, "plugin", p.Manifest.Name, "err", err)
					continue
				}
				want[t.Name], owners[t.Name] = t, p.Manifest.Name
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plugins = owners
	var gone []string
	for name := range s.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
			delete(s.tools, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	for name, t := range want {
		def, _ := json.Marshal(t)
		if s.tools[name] == string(def) {
			continue
		}
		s.tools[name] = string(def)
		s.srv.AddTool(t, s.call(name))
	}
}

// Tool is the MCP tool of skill sk of plugin p: name = skill id, title and
// description as the Agent Card shows them, input schema from the manifest
// (an object schema; a skill without one takes any object). A skill whose
// input schema is not an object cannot be a tool.
func Tool(p *plugin.Plugin, sk *plugin.Skill) (*sdk.Tool, error) {
	card := agentcard.Skill(p, sk)
	schema := map[string]any{}
	if len(sk.InputSchema) > 0 {
		if err := json.Unmarshal(sk.InputSchema, &schema); err != nil {
			return nil, fmt.Errorf("input_schema is not a JSON object: %w", err)
		}
	}
	switch t := schema["type"]; t {
	case nil:
		schema["type"] = "object"
	case "object":
	default:
		return nil, fmt.Errorf("input_schema has type %v; MCP tool arguments are objects", t)
	}
	return &sdk.Tool{Name: card.ID, Title: card.Name, Description: card.Description, InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{Title: card.Name}}, nil
}

// call is the handler of tool name: the skill runs as an A2A SendMessage.
func (s *Server) call(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args any = map[string]any{}
		if req.Params != nil && len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return s.toolError(ctx, fault.Wrap(fault.InvalidParams, fault.ReasonInvalidParams, err, "arguments are not JSON")), nil
			}
		}
		msg := a2av1.NewMessage(a2av1.MessageRoleUser, a2av1.NewDataPart(args))
		msg.Metadata = map[string]any{a2a.MetaSkillID: name}
		msg.ContextID = stdioContext
		if req.Session != nil && req.Session.ID() != "" {
			msg.ContextID = ContextPrefix + req.Session.ID()
		}
		params, err := json.Marshal(a2av1.SendMessageRequest{Message: msg})
		if err != nil {
			return nil, fmt.Errorf("mcp: encode the call: %w", err)
		}
		res, err := s.cfg.Invoker.Invoke(ctx, "SendMessage", params)
		if err != nil {
			return s.toolError(ctx, err), nil
		}
		sr, ok := res.(a2av1.StreamResponse)
		task, _ := sr.Event.(*a2av1.Task)
		if !ok || task == nil {
			return nil, fmt.Errorf("mcp: SendMessage answered %T", res)
		}
		return taskResult(task), nil
	}
}

// taskResult turns a finished task into the tool's result: its output, or
// for a task that did not complete a tool error (errorResult) from its
// status message: the text, and the fault.Summary its metadata carries.
func taskResult(task *a2av1.Task) *sdk.CallToolResult {
	if task.Status.State != a2av1.TaskStateCompleted {
		info := map[string]any{}
		text := "the skill ended " + string(task.Status.State)
		if m := task.Status.Message; m != nil {
			for k, v := range m.Metadata {
				info[k] = v
			}
			for _, p := range m.Parts {
				if t := p.Text(); t != "" {
					text = t
				}
			}
		}
		if _, ok := info["message"]; !ok {
			info["message"] = text
		}
		return errorResult(text, info, string(task.Status.State))
	}
	out := &sdk.CallToolResult{Content: []sdk.Content{}}
	for _, art := range task.Artifacts {
		for _, p := range art.Parts {
			if d := p.Data(); d != nil {
				b, _ := json.Marshal(d)
				out.Content = append(out.Content, &sdk.TextContent{Text: string(b)})
				if m, ok := d.(map[string]any); ok {
					out.StructuredContent = m
				} else {
					out.StructuredContent = map[string]any{"result": d}
				}
			} else if t := p.Text(); t != "" {
				out.Content = append(out.Content, &sdk.TextContent{Text: t})
			}
		}
	}
	return out
}

// toolError is a call refused before the skill ran (invalid arguments,
// scope, rate) as a tool error (errorResult) of its fault.Summary; the text
// of an error that is not a fault is logged, not sent (fault.Safe).
func (s *Server) toolError(ctx context.Context, err error) *sdk.CallToolResult {
	fe, hidden := fault.Safe(err)
	if hidden {
		s.log.ErrorContext(ctx, "mcp: tool call failed", "err", err)
	}
	return errorResult(fe.Error(), fe.Summary().Map(), "")
}

// errorResult is the one shape of a failed tool call: the error's text as
// content, isError, and the fault.Summary (code, reason, kind, message)
// as structured content, with the task's state when a task ran.
func errorResult(text string, summary map[string]any, state string) *sdk.CallToolResult {
	if state != "" {
		summary["state"] = state
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: summary}
}

// ServeStdio serves one MCP client on r and w (newline-delimited JSON-RPC)
// until the client disconnects or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	return s.srv.Run(ctx, &sdk.IOTransport{Reader: r, Writer: w})
}
