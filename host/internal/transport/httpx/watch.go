package httpx

import (
	"context"
	"net"
	"sync"
	"time"
)

// watchAfter is how long a request runs before its connection is watched
// for a client that leaves (watchPeer): most requests are answered sooner,
// and a watch costs a goroutine, a system call and three deadline updates,
// a tenth of a small call's CPU. A client that leaves is seen after
// watchAfter to twice that.
const watchAfter = 5 * time.Millisecond

// watcher starts the watch of every request still running watchAfter after
// it began. Requests join a list; one goroutine, which runs only while
// requests do, ticks every watchAfter and starts the watches of those that
// joined before the previous tick and have not ended: a request costs a
// list entry, not a timer of its own (adding and stopping a runtime timer
// per request cost as much as the watch it saved).
type watcher struct {
	mu      sync.Mutex
	young   []*lateWatch // joined since the last tick
	old     []*lateWatch // joined before it: due at the next tick
	ticking bool         // the goroutine runs
}

// lateWatch is one request's watch, started late or never.
type lateWatch struct {
	conn   net.Conn
	cancel context.CancelCauseFunc // the request's context, with errClientGone when its client leaves

	mu    sync.Mutex
	ended bool   // end ran: the watch must not start
	stop  func() // the watch's, once started
}

// add enters a request on conn whose context cancel ends.
func (w *watcher) add(conn net.Conn, cancel context.CancelCauseFunc) *lateWatch {
	lw := &lateWatch{conn: conn, cancel: cancel}
	w.mu.Lock()
	w.young = append(w.young, lw)
	start := !w.ticking
	w.ticking = true
	w.mu.Unlock()
	if start {
		go w.tick() //nolint:contextcheck // ends by itself once no request runs
	}
	return lw
}

// tick starts the watches that are due every watchAfter, until a tick
// finds no request at all.
func (w *watcher) tick() {
	var due []*lateWatch
	for {
		time.Sleep(watchAfter)
		w.mu.Lock()
		due, w.old, w.young = w.old, w.young, due[:0]
		if len(due) == 0 && len(w.old) == 0 {
			w.ticking = false
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		for i, lw := range due {
			lw.start()
			due[i] = nil // the request may end long before the list is reused
		}
	}
}

// start starts the watch unless the request has ended.
func (lw *lateWatch) start() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if !lw.ended {
		lw.stop = watchPeer(lw.conn, func() { lw.cancel(errClientGone) })
	}
}

// end stops the watch, or keeps it from starting, and waits for it.
func (lw *lateWatch) end() {
	lw.mu.Lock()
	lw.ended = true
	stop := lw.stop
	lw.mu.Unlock()
	if stop != nil {
		stop()
	}
}
