package assemble

import (
	"context"
	"fmt"

	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/a2a/push"
	"github.com/skillhost/skillhost/host/internal/a2a/rest"
	"github.com/skillhost/skillhost/host/internal/mcp"
	"github.com/skillhost/skillhost/host/internal/provenance"
	"github.com/skillhost/skillhost/host/internal/transport/httpx"
)

// publicURL is the base URL published in Agent Cards.
func (h *Root) publicURL() string { return publicBase(h.cfg, h.Addr()) }

// provisionA2A opens the task store, the contexts and the push configs and
// registers the A2A methods, their HTTP+JSON binding (REST) included.
func (h *Root) provisionA2A(ctx context.Context) error {
	tasks, err := a2a.OpenTaskStore(ctx, h.Store, a2a.TaskStoreConfig{A2A: h.cfg.A2A, Logger: h.log,
		Provenance: provenance.NewSigner(h.signer, agentcard.DefaultAgentName)})
	if err != nil {
		return fmt.Errorf("a2a task store: %w", err)
	}
	contexts, err := a2a.OpenContexts(ctx, h.Store, h.cfg.A2A.ContextIdle, h.log)
	if err != nil {
		return fmt.Errorf("a2a contexts: %w", err)
	}
	h.background("a2a contexts", contexts.Run)
	// http_fetch's dial guard (net.allow_private) on literal URLs
	pushes, err := push.Open(ctx, h.Store, push.Options{Push: h.cfg.A2A.Push, Delivery: h.delivery, Net: h.Net, Logger: h.log})
	if err != nil {
		return fmt.Errorf("a2a push: %w", err)
	}
	h.background("a2a push", pushes.Run)
	h.tasks, err = a2a.NewService(a2a.ServiceConfig{
		A2A:      h.cfg.A2A,
		Executor: h.Registry,
		Snapshot: h.Registry.Snapshot,
		Tasks:    tasks,
		Cards:    h.cards,
		Logger:   h.log,
		Guard:    h.guard,
		Contexts: contexts,
		Push:     pushes,
		// a task of a lost host runs again here as its owner
		Principals: h.authn.Keys().PrincipalOf,
	})
	if err != nil {
		return fmt.Errorf("a2a service: %w", err)
	}
	h.onClose("a2a", h.tasks.Close)                // running tasks end (canceled) and are stored
	h.background("a2a input timeout", h.tasks.Run) // expires tasks left waiting for input (a2a.input_timeout)
	h.background("a2a leases", h.tasks.RunLeases)  // beats, sweeps for tasks of lost hosts, catch-up after reconnects
	a2a.Register(h.engine, h.tasks)
	h.rest = rest.New(h.engine, h.log)
	return nil
}

// provisionMCP builds the MCP tools: the same skills, from the same
// manifests, through the same engine.
func (h *Root) provisionMCP(context.Context) error {
	h.mcp = mcp.New(mcp.Config{MCP: h.cfg.MCP, Invoker: h.engine, Snapshot: h.Registry.Snapshot, Version: h.version, Logger: h.log})
	h.Registry.OnChange(h.mcp.Update)
	return nil
}

// restBinding is the A2A HTTP+JSON binding as the HTTP transport's
// RESTHandler: the types of one mapped to the other's, nothing else.
type restBinding struct{ bind *rest.Binding }

// ServeREST implements httpx.RESTHandler.
func (b restBinding) ServeREST(ctx context.Context, r httpx.RESTRequest) httpx.RESTReply {
	rep := b.bind.Serve(ctx, rest.Request{Method: r.Method, Path: r.Path, Query: r.Query, Body: r.Body})
	return httpx.RESTReply{Status: rep.Status, Body: rep.Body, Stream: rep.Stream, Err: rep.Err}
}
