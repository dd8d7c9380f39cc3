package stdio

import (
	"bufio"
	"io"
	"log/slog"
	"sync"
)

// writer owns w: one goroutine writes every frame, so frames never
// interleave. After a write error it keeps accepting (and dropping) frames
// so senders never block, and closes failed.
type writer struct {
	out       chan frame
	failed    chan struct{}
	done      chan struct{}
	abandoned chan struct{} // closed by abandon: senders stop waiting
	abandon1  sync.Once
	log       *slog.Logger

	mu  sync.Mutex
	err error
}

func newWriter(w io.Writer, log *slog.Logger) *writer {
	wr := &writer{out: make(chan frame, 16), failed: make(chan struct{}), done: make(chan struct{}),
		abandoned: make(chan struct{}), log: log}
	go wr.loop(bufio.NewWriter(w))
	return wr
}

func (wr *writer) loop(bw *bufio.Writer) {
	defer close(wr.done)
	for f := range wr.out {
		if wr.error() != nil {
			f.written()
			continue
		}
		err := WriteFrame(bw, f.body)
		if err == nil && len(wr.out) == 0 {
			err = bw.Flush()
		}
		f.written()
		if err != nil {
			wr.log.Error("stdio: write failed", "err", err)
			wr.mu.Lock()
			wr.err = err
			wr.mu.Unlock()
			close(wr.failed)
		}
	}
	if wr.error() == nil {
		if err := bw.Flush(); err != nil {
			wr.mu.Lock()
			wr.err = err
			wr.mu.Unlock()
		}
	}
}

// frame is one queued frame; done (optional) runs once it is written or
// dropped.
type frame struct {
	body []byte
	done func()
}

func (f frame) written() {
	if f.done != nil {
		f.done()
	}
}

// send queues one frame; false once writing has failed or the output was
// abandoned.
func (wr *writer) send(body []byte) bool { return wr.sendThen(body, nil) }

// sendThen is send with done run once the frame is written or dropped (at
// once when it is not queued).
func (wr *writer) sendThen(body []byte, done func()) bool {
	f := frame{body, done}
	select {
	case <-wr.failed:
		f.written()
		return false
	case <-wr.abandoned:
		f.written()
		return false
	default:
	}
	select {
	case wr.out <- f:
		return true
	case <-wr.failed:
	case <-wr.abandoned:
	}
	f.written()
	return false
}

// abandon makes every pending and later send return false at once. The
// goroutine blocked writing to a peer that stopped reading stays blocked
// until the peer reads or the output is closed.
func (wr *writer) abandon() { wr.abandon1.Do(func() { close(wr.abandoned) }) }

func (wr *writer) error() error {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.err
}

// close flushes the queued frames and returns the first write error. No
// send may happen after close.
func (wr *writer) close() error {
	close(wr.out)
	<-wr.done
	return wr.error()
}
