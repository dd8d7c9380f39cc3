package devkit

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// steps shows the steps of a long operation with their elapsed time. On a
// terminal the running step's line is redrawn with a live timer; elsewhere
// (pipes, files, CI logs) each step prints plain lines. A nil *steps is
// silent. It is safe for use by one goroutine at a time.
type steps struct {
	w     io.Writer
	tty   bool
	total int
	n     int

	mu      sync.Mutex
	name    string
	started time.Time
	stop    chan struct{}
	done    chan struct{}
}

// newSteps returns a display of total steps on w; nil when w is nil.
func newSteps(w io.Writer, total int) *steps {
	if w == nil {
		return nil
	}
	return &steps{w: w, tty: isTerminal(w), total: total}
}

// isTerminal reports whether w is a character device (a TTY).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Start begins the next step, ending the previous one as done.
func (s *steps) Start(name string) {
	if s == nil {
		return
	}
	s.End(nil)
	s.mu.Lock()
	s.n++
	s.name, s.started = name, time.Now()
	s.mu.Unlock()
	if !s.tty {
		fmt.Fprintf(s.w, "[%d/%d] %s ...\n", s.n, s.total, name)
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.tick(s.stop, s.done)
}

// tick redraws the running step until stopped.
func (s *steps) tick(stop, done chan struct{}) {
	defer close(done)
	frames := []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for i := 0; ; i++ {
		s.mu.Lock()
		fmt.Fprintf(s.w, "\r\033[K%s [%d/%d] %s  %s", frames[i%len(frames)], s.n, s.total, s.name, elapsed(s.started))
		s.mu.Unlock()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// End finishes the running step: done when err is nil, failed otherwise.
// Ending when no step runs does nothing.
func (s *steps) End(err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	name, started := s.name, s.started
	s.mu.Unlock()
	if name == "" {
		return
	}
	if s.tty {
		close(s.stop) // the ticker draws no more once done is closed
		<-s.done
	}
	s.mu.Lock()
	s.name = ""
	s.mu.Unlock()
	status, mark := "done", "✓"
	if err != nil {
		status, mark = "FAILED", "✗"
	}
	if !s.tty {
		fmt.Fprintf(s.w, "[%d/%d] %s %s (%s)\n", s.n, s.total, name, status, elapsed(started))
		return
	}
	fmt.Fprintf(s.w, "\r\033[K%s [%d/%d] %s  %s\n", mark, s.n, s.total, name, elapsed(started))
}

func elapsed(since time.Time) string {
	return time.Since(since).Round(100 * time.Millisecond).String()
}
