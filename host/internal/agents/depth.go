package agents

import (
	"context"
	"strconv"

	"github.com/skillhost/skillhost/host/internal/jsonrpc"
	"github.com/skillhost/skillhost/host/internal/remote"
)

// maxHeaderDepth bounds a depth read from a header (any larger value is
// already past every limit).
const maxHeaderDepth = 1 << 16

type depthKey struct{}

// WithDepth returns ctx carrying the depth of the call it belongs to.
func WithDepth(ctx context.Context, depth int) context.Context {
	return context.WithValue(ctx, depthKey{}, depth)
}

// Depth is the depth of the call ctx belongs to: attached by the router,
// else read from the request's remote.DepthHeader, else 0. A malformed
// header counts as 0 (a client can always start a chain at 0; only hops
// between hosts add to it).
func Depth(ctx context.Context) int {
	if d, ok := ctx.Value(depthKey{}).(int); ok {
		return d
	}
	v := jsonrpc.TransportFrom(ctx).Header(remote.DepthHeader)
	d, err := strconv.Atoi(v)
	if err != nil || d < 0 {
		return 0
	}
	return min(d, maxHeaderDepth)
}
