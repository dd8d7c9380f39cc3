package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/transport/stdio"
)

// Serve runs the configured transports until ctx ends (or, with stdio only,
// until standard input ends), then shuts down gracefully: no new requests,
// in-flight calls finish within http.shutdown_timeout, and the host closes.
// Without a listener (Spec.NoListener) HTTP is served by the caller's app.
func (h *Root) Serve(ctx context.Context) error {
	httpErr := make(chan error, 1)
	if h.http != nil && h.ln != nil {
		h.served.Store(true)
		go func() { httpErr <- h.http.Serve(h.ln) }()
		scheme := "http"
		if h.cfg.HTTP.TLSEnabled() {
			scheme = "https"
		}
		h.log.Info("serving HTTP", "url", fmt.Sprintf("%s://%s", scheme, h.ln.Addr()), "access", h.accessMode())
	}
	grpcErr := h.serveGRPC()
	stdioErr := make(chan error, 1)
	if h.cfg.Stdio {
		h.log.Info("serving stdio", "framing", "<byte-length>\\n<json>")
		go func() {
			// stdio (local mode) is trusted: whoever can write to the
			// host's stdin started it. One local principal.
			sctx := auth.With(ctx, auth.Local(stdioPrincipal))
			stdioErr <- stdio.Serve(sctx, h.spec.Stdin, h.spec.Stdout, h.engine, stdio.Limits{
				MaxFrameBytes: int(h.cfg.RPC.MaxBody), Concurrency: h.cfg.RPC.StdioConcurrency,
				DrainTimeout: h.cfg.HTTP.ShutdownTimeout,
			}, stdio.WithLogger(h.log))
		}()
	}
	if h.cfg.MCPStdio {
		h.log.Info("serving MCP on stdio", "framing", "newline-delimited JSON-RPC")
		go func() {
			// Like stdio, MCP on stdio is trusted: one local principal.
			mctx := auth.With(ctx, auth.Local(MCPStdioPrincipal))
			err := h.mcp.ServeStdio(mctx, io.NopCloser(h.spec.Stdin), nopWriteCloser{h.spec.Stdout})
			if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
				stdioErr <- err
				return
			}
			stdioErr <- nil
		}()
	}
	var runErr error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err := <-httpErr:
			runErr = fmt.Errorf("http: %w", err)
			break wait
		case err := <-grpcErr:
			runErr = fmt.Errorf("grpc: %w", err)
			break wait
		case err := <-stdioErr:
			if err != nil {
				runErr = fmt.Errorf("stdio: %w", err)
				break wait
			}
			if h.http == nil && grpcErr == nil {
				h.log.Info("stdin closed; shutting down")
				break wait
			}
			h.log.Info("stdin closed; still serving HTTP")
			stdioErr = nil
		}
	}
	return errors.Join(runErr, h.shutdown(ctx))
}

// shutdown drains the host (no new tasks; the running ones may finish
// while everything else is still served), stops the HTTP server (waiting
// for in-flight requests), all within the shutdown timeout, and closes the
// host (tasks still running are handed back).
func (h *Root) shutdown(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.HTTP.ShutdownTimeout)
	defer cancel()
	h.log.Info("shutting down", "grace", h.cfg.HTTP.ShutdownTimeout)
	var errs []error
	h.drain(sctx)
	if h.http != nil {
		if err := h.http.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
	}
	errs = append(errs, h.shutdownGRPC(sctx))
	// Close gets a moment of its own past the grace: tasks still running
	// are handed back through the store before it closes.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), closeWait)
	defer ccancel()
	errs = append(errs, h.Close(cctx))
	return errors.Join(errs...)
}

// closeWait bounds Close after the shutdown grace.
const closeWait = 10 * time.Second

// MCPStdioPrincipal is the trusted local principal of MCP on stdio.
const MCPStdioPrincipal = "mcp-stdio"

// nopWriteCloser keeps the MCP transport from closing the host's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
