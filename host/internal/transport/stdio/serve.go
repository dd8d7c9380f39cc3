package stdio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/jsonrpc"
)

// Limits bound Serve; the host passes rpc.max_body, rpc.stdio_concurrency
// and http.shutdown_timeout. Every field is required.
type Limits struct {
	// MaxFrameBytes caps a frame's body (the length line is bounded
	// separately); a larger frame is discarded and answered with -32600,
	// reason body_too_large.
	MaxFrameBytes int
	// Concurrency bounds how many frames are handled at once (a streaming
	// call holds its slot until its stream ends).
	Concurrency int
	// DrainTimeout bounds how long Serve waits after ctx ends for in-flight
	// calls to finish and their responses to be written (a peer that
	// stopped reading would otherwise hold Serve forever).
	DrainTimeout time.Duration
}

type settings struct {
	maxFrame    int
	concurrency int
	drain       time.Duration
	log         *slog.Logger
}

// ErrOutputStalled is returned by Serve when ctx ended and the peer did not
// read the remaining responses within the drain timeout.
var ErrOutputStalled = errors.New("stdio: the peer stopped reading; pending responses were dropped")

// Option configures Serve.
type Option func(*settings)

// WithLogger sets the logger for framing and write errors. Optional.
// Default: a logger that discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *settings) {
		if l != nil {
			c.log = l
		}
	}
}

type readResult struct {
	body []byte
	err  error
}

// Serve reads frames from r, hands each body to eng and writes the replies
// to w as frames, until r ends (returns nil), ctx is canceled (stops
// reading, lets in-flight calls finish and their replies be written, then
// returns nil), or reading or writing fails (returns that error).
//
// Handlers run with a context that is not canceled by ctx (in-flight calls
// finish; their own deadlines apply); streams are read with ctx and end when
// it is canceled. A reader blocked in r.Read is not interrupted by ctx: the
// goroutine reading r exits once r returns (close r to release it).
func Serve(ctx context.Context, r io.Reader, w io.Writer, eng *jsonrpc.Engine, lim Limits, opts ...Option) error {
	if lim.MaxFrameBytes < 1 || lim.Concurrency < 1 || lim.DrainTimeout <= 0 {
		return fmt.Errorf("stdio: limits %+v: every one must be positive", lim)
	}
	cfg := settings{maxFrame: lim.MaxFrameBytes, concurrency: lim.Concurrency, drain: lim.DrainTimeout,
		log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&cfg)
	}

	wr := newWriter(w, cfg.log)
	frames := make(chan readResult)
	stop := make(chan struct{})
	go readLoop(bufio.NewReader(r), cfg.maxFrame, frames, stop)

	s := &session{eng: eng, wr: wr, log: cfg.log, streamCtx: ctx}
	sem := make(chan struct{}, cfg.concurrency)
	var wg sync.WaitGroup
	var readErr error
	resyncing := false
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-wr.failed:
			break loop
		case res := <-frames:
			if res.err != nil {
				done, err := s.frameError(ctx, res.err, &resyncing)
				if done {
					readErr = err
					break loop
				}
				continue
			}
			resyncing = false
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				break loop
			}
			hctx := jsonrpc.WithTransport(context.WithoutCancel(ctx),
				jsonrpc.TransportInfo{Name: "stdio", RequestID: jsonrpc.NewRequestID()})
			wg.Go(func() {
				defer func() { <-sem }()
				s.handle(hctx, res.body)
			})
		}
	}
	close(stop)
	writeErr, err := drain(ctx, cfg.drain, &wg, wr)
	if err != nil {
		return err
	}
	if readErr != nil {
		return readErr
	}
	return writeErr
}

// drain waits for in-flight calls and flushes the output. Without a
// cancellation it waits as long as the calls take (each is bounded by its
// own deadline); once ctx has ended it waits at most timeout, then abandons
// the output (ErrOutputStalled) so a peer that stopped reading cannot hold
// the host.
func drain(ctx context.Context, timeout time.Duration, wg *sync.WaitGroup, wr *writer) (writeErr, err error) {
	finished := make(chan error, 1)
	go func() {
		wg.Wait()
		finished <- wr.close()
	}()
	done := ctx.Done()
	var expired <-chan time.Time
	for {
		select {
		case writeErr = <-finished:
			return writeErr, nil
		case <-done:
			done = nil
			t := time.NewTimer(timeout)
			defer t.Stop()
			expired = t.C
		case <-expired:
			wr.abandon()
			return nil, ErrOutputStalled
		}
	}
}

// readLoop reads frames until a terminal error or until stop is closed.
func readLoop(br *bufio.Reader, max int, frames chan<- readResult, stop <-chan struct{}) {
	for {
		body, err := ReadFrame(br, max)
		select {
		case frames <- readResult{body, err}:
		case <-stop:
			return
		}
		if err != nil && !errors.Is(err, ErrMalformedHeader) && !errors.Is(err, ErrFrameTooLarge) {
			return
		}
	}
}

type session struct {
	eng       *jsonrpc.Engine
	wr        *writer
	log       *slog.Logger
	streamCtx context.Context
}

// frameError answers a framing error and reports whether serving must end
// (and with which error: nil for a clean end of input).
func (s *session) frameError(ctx context.Context, err error, resyncing *bool) (bool, error) {
	tctx := jsonrpc.WithTransport(ctx, jsonrpc.TransportInfo{Name: "stdio"})
	switch {
	case errors.Is(err, io.EOF):
		return true, nil
	case errors.Is(err, ErrMalformedHeader):
		// Answer the first bad line only, then skip lines silently until one
		// parses as a length: junk of many lines gets one error.
		if !*resyncing {
			s.wr.send(jsonrpc.EncodeError(tctx, nil, jsonrpc.Envelope{},
				fault.New(fault.Parse, fault.ReasonParse, "malformed frame: "+trimPrefix(err))))
		}
		*resyncing = true
		return false, nil
	case errors.Is(err, ErrFrameTooLarge):
		s.wr.send(jsonrpc.EncodeError(tctx, nil, jsonrpc.Envelope{},
			fault.New(fault.InvalidRequest, fault.ReasonBodyTooLarge, trimPrefix(err))))
		return false, nil
	case errors.Is(err, ErrTruncated):
		s.wr.send(jsonrpc.EncodeError(tctx, nil, jsonrpc.Envelope{},
			fault.New(fault.Parse, fault.ReasonParse, "input ended inside a frame")))
		return true, nil
	}
	s.log.ErrorContext(ctx, "stdio: read failed", "err", err)
	return true, fmt.Errorf("stdio: %w", err)
}

func trimPrefix(err error) string {
	const p = "stdio: "
	if m := err.Error(); len(m) > len(p) && m[:len(p)] == p {
		return m[len(p):]
	}
	return err.Error()
}

func (s *session) handle(ctx context.Context, body []byte) {
	reply := s.eng.Handle(ctx, body)
	switch {
	case reply.Streaming():
		// Streams end with Serve's ctx; the handler's ctx carries the transport.
		sctx := jsonrpc.WithTransport(s.streamCtx, jsonrpc.TransportFrom(ctx))
		_ = reply.Pump(sctx, func(msg []byte) error {
			if !s.wr.send(msg) {
				return errOutputClosed
			}
			return nil
		})
	case reply.Body != nil:
		s.wr.sendThen(reply.Body, reply.Done) // its bytes stay held until written
	}
}

// errOutputClosed ends a stream whose frames can no longer be written.
var errOutputClosed = errors.New("stdio: output closed")
