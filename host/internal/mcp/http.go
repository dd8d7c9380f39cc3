package mcp

import (
	"net/http"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillhost/skillhost/host/internal/auth"
)

// HTTP session bounds.
const (
	// MaxHTTPSessions caps the MCP sessions open over HTTP on one host.
	MaxHTTPSessions = 1024
	// HTTPSessionIdle closes an MCP session over HTTP unused this long.
	HTTPSessionIdle = 30 * time.Minute
	sessionHeader   = "Mcp-Session-Id"
)

// httpSessions remembers which principal opened each MCP session.
type httpSessions struct {
	mu     sync.Mutex
	owners map[string]string
}

// Handler serves MCP's Streamable HTTP transport: POST for messages, GET
// for the server's event stream (tools/list_changed), DELETE to end a
// session. The transport has authenticated the request and attached its
// principal; a session belongs to the principal that opened it, and its id
// sent by another principal is answered like an unknown session (404).
func (s *Server) Handler() http.Handler {
	sessions := &httpSessions{owners: map[string]string{}}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv },
		&sdk.StreamableHTTPOptions{Logger: s.log, SessionTimeout: HTTPSessionIdle})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		owner := auth.From(r.Context()).Owner()
		id := r.Header.Get(sessionHeader)
		if id != "" {
			sessions.mu.Lock()
			o, known := sessions.owners[id]
			if known && r.Method == http.MethodDelete && o == owner {
				delete(sessions.owners, id)
			}
			sessions.mu.Unlock()
			if known && o != owner {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		if !sessions.room(s.srv) {
			http.Error(w, "too many MCP sessions are open on this host", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(&sessionRecorder{ResponseWriter: w, record: func(id string) {
			sessions.mu.Lock()
			sessions.owners[id] = owner
			sessions.mu.Unlock()
		}}, r)
	})
}

// room reports whether a new session may open, forgetting the owners of
// sessions that ended (closed or idle) when the table is full.
func (t *httpSessions) room(srv *sdk.Server) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.owners) < MaxHTTPSessions {
		return true
	}
	live := map[string]bool{}
	for ss := range srv.Sessions() {
		live[ss.ID()] = true
	}
	for id := range t.owners {
		if !live[id] {
			delete(t.owners, id)
		}
	}
	return len(t.owners) < MaxHTTPSessions
}

// sessionRecorder records the session id the SDK assigns (its response
// header) before the response goes out.
type sessionRecorder struct {
	http.ResponseWriter
	record func(id string)
	once   sync.Once
}

func (r *sessionRecorder) capture() {
	r.once.Do(func() {
		if id := r.Header().Get(sessionHeader); id != "" {
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
