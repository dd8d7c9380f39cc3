package host

import (
	"context"
	"fmt"
	"net/url"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/mcp"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// publicURL is the base URL published in Agent Cards.
func (h *Host) publicURL() string { return publicBase(h.cfg, h.Addr()) }

// setupA2A builds the Agent Cards and registers the A2A methods. Cards are
// regenerated whenever the plugin set changes (hot reload).
func (h *Host) setupA2A(ctx context.Context) error {
	h.cards = newCardService(h.cfg, h.opts.Version, h.publicURL(), h.authn.Enabled(), h.registry.Snapshot, h.signer, h.log)
	h.registry.OnChange(h.cards.Update)
	ac := h.cfg.A2A
	tasks, err := a2a.OpenTaskStore(ctx, h.store, a2a.TaskStoreConfig{MaxListBytes: int64(ac.MaxListBytes), Logger: h.log,
		Provenance: provenance.NewSigner(h.signer, a2a.DefaultAgentName), MaxBytes: int64(ac.MaxBucket),
		MaxPerKey: ac.MaxTasksPerKey, MaxBytesPerKey: int64(ac.MaxTaskBytesPerKey), Reserve: int64(ac.Reserve),
		LeaseTTL: ac.LeaseTTL})
	if err != nil {
		return fmt.Errorf("a2a task store: %w", err)
	}
	contexts, err := a2a.OpenContexts(ctx, h.store, h.cfg.A2A.ContextIdle, h.log)
	if err != nil {
		return fmt.Errorf("a2a contexts: %w", err)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		contexts.Run(h.bg)
	}()
	pc := h.cfg.A2A.Push
	pushNet := h.parts.Net // http_fetch's dial guard (net.allow_private), with the push timeout
	pushNet.Timeout = pc.Timeout
	push, err := a2a.OpenPush(ctx, h.store, a2a.PushOptions{Delivery: h.delivery, Net: pushNet, MaxPerTask: pc.MaxPerTask, MaxPerKey: pc.MaxPerKey,
		MaxAttempts: pc.MaxAttempts, Logger: h.log})
	if err != nil {
		return fmt.Errorf("a2a push: %w", err)
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		push.Run(h.bg)
	}()
	h.tasks, err = a2a.NewService(a2a.ServiceConfig{
		Executor:         h.registry,
		Snapshot:         h.registry.Snapshot,
		Tasks:            tasks,
		Cards:            h.cards,
		Logger:           h.log,
		MaxMetadataBytes: int(h.cfg.A2A.MaxMetadata),
		MaxHistoryBytes:  int(h.cfg.A2A.MaxHistory),
		Guard:            h.guard,
		Contexts:         contexts,
		Push:             push,
		MaxStreams:       h.cfg.A2A.MaxStreams,
		MaxStreamsPerKey: shareOrNone(h.cfg.A2A.MaxStreamsPerKey),
		InputTimeout:     h.cfg.A2A.InputTimeout,
		LeaseSweep:       ac.LeaseSweep,
		Principals:       h.authn.Keys().PrincipalOf,
	})
	if err != nil {
		return fmt.Errorf("a2a service: %w", err)
	}
	h.wg.Add(1)
	go func() { // expires tasks left waiting for input (a2a.input_timeout)
		defer h.wg.Done()
		h.tasks.Run(h.bg)
	}()
	h.wg.Add(1)
	go func() { // task leases: beats, sweeps for tasks of lost hosts, catch-up after reconnects
		defer h.wg.Done()
		h.tasks.RunLeases(h.bg)
	}()
	a2a.Register(h.engine, h.tasks)
	h.rest = a2a.NewREST(h.engine, h.log)
	// MCP tools: the same skills, from the same manifests, through the same engine.
	h.mcp = mcp.New(mcp.Config{Invoker: h.engine, Snapshot: h.registry.Snapshot, Version: h.opts.Version, Logger: h.log,
		MaxSessions: h.cfg.MCP.MaxSessions, MaxSessionsPerKey: shareOrNone(h.cfg.MCP.MaxSessionsPerKey)})
	h.registry.OnChange(h.mcp.Update)
	return nil
}

// serveREST adapts the A2A HTTP+JSON binding to the HTTP transport.
func (h *Host) serveREST(ctx context.Context, method, path string, query url.Values, body []byte) (int, []byte, jsonrpc.Stream, *fault.Error) {
	r := h.rest.Serve(ctx, a2a.RESTRequest{Method: method, Path: path, Query: query, Body: body})
	return r.Status, r.Body, r.Stream, r.Err
}
