package assemble

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/store"
)

// stdioPrincipal is the name of the trusted local principal of the stdio
// transport: every scope, no limits, its own sessions and tasks.
const stdioPrincipal = "stdio"

// authorize is the engine middleware that applies the principal's method
// scopes (every batch element on its own), its rate limit and the caps on
// running calls — its key's share and the host's (an A2A task holds its
// slot itself, while it runs) — and writes the audit line of every refusal for
// credentials or scopes, including those a handler returns (a skill out of
// scope).
func authorize(log *slog.Logger, guard *auth.Guard) func(method string, next jsonrpc.Handler) jsonrpc.Handler {
	return func(method string, next jsonrpc.Handler) jsonrpc.Handler {
		return func(ctx context.Context, req *jsonrpc.Request) (any, error) {
			who := auth.From(ctx)
			if err := who.AllowMethod(method, req.Meta.SessionID); err != nil {
				audit(ctx, log, who, method, err)
				return nil, err
			}
			if auth.StartsTask(method) {
				if err := guard.AdmitRate(who); err != nil { // the task takes the running slot
					return nil, err
				}
			} else {
				release, err := guard.Admit(who)
				if err != nil {
					return nil, err
				}
				defer release()
			}
			res, err := next(ctx, req)
			if errors.Is(err, fault.ErrForbidden) || errors.Is(err, fault.ErrUnauthorized) {
				audit(ctx, log, who, method, err)
			}
			return res, err
		}
	}
}

// audit logs a refused call: the key id (if any), the remote address and
// the request id; never a credential.
func audit(ctx context.Context, log *slog.Logger, who auth.Principal, method string, err error) {
	tr := jsonrpc.TransportFrom(ctx)
	fe := fault.From(err)
	status := fe.Kind.HTTPStatus()
	log.WarnContext(ctx, "audit: request refused", "status", status, "reason", fe.Reason, "key_id", who.KeyID(),
		"principal", who.String(), "remote", tr.RemoteAddr, "request_id", tr.RequestID, "transport", tr.Name, "method", method)
}

// tokenStore reads session tokens from the session store.
type tokenStore struct{ st *store.Store }

func (t tokenStore) SessionToken(ctx context.Context, id string) (auth.TokenRecord, error) {
	sess, err := t.st.CachedSession(ctx, id)
	if err != nil {
		return auth.TokenRecord{}, err
	}
	return auth.TokenRecord{Owner: sess.Owner, SHA256: sess.TokenSHA256, Active: sess.Status == store.StatusActive}, nil
}

// accessMode describes, for the start-up log, who HTTP serves.
func (h *Root) accessMode() string {
	if h.authn.Enabled() {
		return fmt.Sprintf("API keys required (%d configured); /health and the Agent Cards are public", h.authn.Keys().Len())
	}
	return "only loopback clients are accepted (no API keys configured in auth.keys)"
}
