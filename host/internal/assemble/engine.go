package assemble

import (
	"context"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/notify"
	"github.com/skillhost/skillhost/host/internal/rpc"
)

// provisionEngine builds the JSON-RPC engine every transport dispatches to
// (rpc.*), its outermost middleware the access line, metrics and failure
// ring of every call (log.access) around authorization; and the
// authenticator of HTTP's credentials (API keys, session tokens).
func (h *Root) provisionEngine(context.Context) error {
	h.authn = auth.NewAuthenticator(h.keys, tokenStore{h.Store})
	authz := authorize(h.log, h.guard)
	c := h.cfg.RPC
	h.engine = jsonrpc.NewEngine(jsonrpc.Limits{
		MaxBodyBytes: int(c.MaxBody), MaxBatch: c.MaxBatch, BatchConcurrency: c.BatchConcurrency,
		MaxBatchResponseBytes: int(c.MaxBatchResponse), ResponseBudget: int64(c.ResponseBudget),
	},
		jsonrpc.WithLogger(h.log),
		jsonrpc.WithRejected(h.rejected),
		// every method, whoever registers it: metrics and access lines count
		// what authorization refuses
		jsonrpc.WithMiddleware(func(method string, next jsonrpc.Handler) jsonrpc.Handler {
			return h.access(method, authz(method, next))
		}),
	)
	return nil
}

// provisionRPC registers the _cleveragents/* methods: sessions and their
// context (timed into the store metrics), skill/execute, agent/call through
// the router, agent/notify over the event bus.
func (h *Root) provisionRPC(context.Context) error {
	notifier := notify.New(notify.Deps{Bus: h.events, Agents: h.Registry, Logger: h.log})
	rpc.New(rpc.Deps{Sessions: timedSessions{h.Store, newStoreTimers(h.metrics)}, Skills: h.Registry, Agents: h.Router, Guard: h.guard,
		MaxSessionBytes: int64(h.cfg.Store.MaxSessionBytes), Notifier: notifier, Logger: h.log}).Register(h.engine, nil)
	return nil
}
