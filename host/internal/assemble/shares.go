package assemble

import (
	"context"

	"github.com/skillhost/skillhost/host/internal/metrics"
	"github.com/skillhost/skillhost/host/internal/share"
)

// The tenant model: every resource a client holds open (a connection, a
// stream, an MCP session, a running call) is counted by a share.Counter
// with a host-wide cap and a per-key (for connections: per client address)
// share of it. The counters live with their resources; this file gathers
// them for /metrics and GET /admin/shares.

// shares are the host's counted resources.
func (h *Root) shares() []*share.Counter {
	out := []*share.Counter{h.guard.Running()}
	if h.events != nil {
		out = append(out, h.events.Subscribers())
	}
	if h.tasks != nil {
		out = append(out, h.tasks.Streams())
	}
	if h.mcp != nil {
		out = append(out, h.mcp.Sessions())
	}
	if h.http != nil {
		out = append(out, h.http.Shares()...)
	}
	return append(out, h.grpcShares()...)
}

// shareMetrics reads the counters for /metrics.
func (h *Root) shareMetrics() []metrics.Share {
	var out []metrics.Share
	for _, c := range h.shares() {
		st := c.Stats()
		out = append(out, metrics.Share{Resource: st.Resource, InUse: st.InUse, Limit: st.Limit,
			RefusedFull: st.RefusedFull, RefusedShare: st.RefusedShare})
	}
	return out
}

// sharesDocument is GET /admin/shares: each counted resource with its caps, what
// is held, its largest holders (keys as "key:<id>", client addresses) and
// its refusals since start.
type sharesDocument struct {
	Shares []share.Stats `json:"shares"`
}

func (h *Root) sharesDoc(context.Context) any {
	doc := sharesDocument{Shares: []share.Stats{}}
	for _, c := range h.shares() {
		doc.Shares = append(doc.Shares, c.Stats())
	}
	return doc
}
