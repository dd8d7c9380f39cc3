package mcp

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/share"
)

// HTTP session bounds that are not configuration keys.
const (
	// HTTPSessionIdle closes an MCP session over HTTP unused this long.
	HTTPSessionIdle = 30 * time.Minute
	sessionHeader   = "Mcp-Session-Id"
)

// newSessionCounter counts the MCP sessions over HTTP, host-wide and per
// key. A refused POST is answered 503 (host full, as before shares) or 429
// (the key's share), with a JSON-RPC error body (see refuse).
func newSessionCounter(cfg Config) *share.Counter {
	limit, per := cfg.MaxSessions, cfg.MaxSessionsPerKey // mcp.max_sessions, mcp.max_sessions_per_key (0: no share)
	return share.New(share.Config{
		Resource: "mcp_sessions", What: "MCP sessions",
		Limit: limit, LimitKey: "mcp.max_sessions", Share: per, ShareKey: "mcp.max_sessions_per_key",
		Full: fault.Newf(fault.ResourceExhausted, fault.ReasonResourceExhausted,
			"%d MCP sessions are open on this host, the limit (mcp.max_sessions); retry later", limit),
		Over: fault.Newf(fault.ResourceExhausted, fault.ReasonKeyQuota,
			"this key holds %d MCP sessions, its share of this host (mcp.max_sessions_per_key); end one (DELETE /mcp) first", per),
	})
}

// httpSessions remembers which principal opened each MCP session.
type httpSessions struct {
	mu     sync.Mutex
	owners map[string]string
}

// Handler serves MCP's Streamable HTTP transport: POST for messages, GET
// for the server's event stream (tools/list_changed), DELETE to end a
// session. The transport has authenticated the request and attached its
// principal; a session belongs to the principal that opened it, and its id
// sent by another principal is answered like an unknown session (404). A
// new session takes one of its key's MCP sessions (Sessions), given back
// when it ends: deleted, idle for HTTPSessionIdle, or failed to initialize.
func (s *Server) Handler() http.Handler {
	sessions := &httpSessions{owners: map[string]string{}}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Logger: s.log, SessionTimeout: HTTPSessionIdle})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := auth.From(r.Context())
		owner := who.Owner()
		id := r.Header.Get(sessionHeader)
		if id != "" {
			sessions.mu.Lock()
			o, known := sessions.owners[id]
			sessions.mu.Unlock()
			if known && o != owner {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodPost { // only a POST opens a session
			h.ServeHTTP(w, r)
			return
		}
		holder := ""
		if who.Limited() { // a key (and its tokens) holds its share; local principals count host-wide only
			holder = owner
		}
		release, err := s.sessions.Acquire(holder)
		if err != nil {
			refuse(r.Context(), w, fault.From(err).With("key_id", who.KeyID()))
			return
		}
		rec := &sessionRecorder{ResponseWriter: w, record: func(id string) {
			sessions.mu.Lock()
			sessions.owners[id] = owner
			sessions.mu.Unlock()
		}}
		h.ServeHTTP(rec, r)
		s.hold(sessions, rec.sessionID(), release)
	})
}

// hold keeps a new session's unit until the SDK ends the session; a request
// that opened none gives it back at once.
func (s *Server) hold(sessions *httpSessions, id string, release func()) {
	var ss *sdk.ServerSession
	if id != "" {
		for live := range s.srv.Sessions() { // O(sessions), once per new session
			if live.ID() == id {
				ss = live
				break
			}
		}
	}
	end := func() {
		if id != "" {
			sessions.mu.Lock()
			delete(sessions.owners, id)
			sessions.mu.Unlock()
		}
		release()
	}
	// None was made, it already ended, or it never initialized: a request
	// other than initialize (server/discover, which clients send first) gets
	// a throwaway session the SDK closes as the request ends, whose closing
	// may still be under way here; it holds no unit.
	if ss == nil || ss.InitializeParams() == nil {
		end()
		return
	}
	go func() {
		_ = ss.Wait() // ends with the session: DELETE, idle timeout, server closed
		end()
	}()
}

// refuse answers a POST that may not open a session with the refusal's
// status (fault's table: 429 for the key's share, 503 when the host is
// full) and a JSON-RPC error body (MCP clients read JSON-RPC) naming the
// cap's configuration key.
func refuse(ctx context.Context, w http.ResponseWriter, fe *fault.Error) {
	body := jsonrpc.EncodeError(ctx, nil, jsonrpc.Envelope{}, fe)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", strconv.Itoa(1))
	w.WriteHeader(fe.HTTPStatus())
	_, _ = w.Write(body)
}

// Sessions counts the MCP sessions open over HTTP (for metrics and admin).
func (s *Server) Sessions() *share.Counter { return s.sessions }

// sessionRecorder records the session id the SDK assigns (its response
// header) before the response goes out.
type sessionRecorder struct {
	http.ResponseWriter
	record func(id string)
	once   sync.Once
	mu     sync.Mutex // the SDK may write from its own goroutines
	id     string
}

// sessionID is the id recorded ("" when the response assigned none).
func (r *sessionRecorder) sessionID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

func (r *sessionRecorder) capture() {
	r.once.Do(func() {
		if id := r.Header().Get(sessionHeader); id != "" {
			r.mu.Lock()
			r.id = id
			r.mu.Unlock()
			r.record(id)
		}
	})
}

func (r *sessionRecorder) WriteHeader(status int) {
	r.capture()
	r.ResponseWriter.WriteHeader(status)
}

func (r *sessionRecorder) Write(p []byte) (int, error) {
	r.capture()
	return r.ResponseWriter.Write(p)
}

// Flush passes the SDK's flushes (SSE events) through.
func (r *sessionRecorder) Flush() {
	r.capture()
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
