// Package faultnet puts a fault-injecting TCP proxy between a client and a
// server in tests: added latency, a bandwidth limit, a cut connection (open
// connections reset, new ones closed at once) and a half-open one (accepted
// and kept open, nothing forwarded either way, as when a peer vanishes
// without a reset). Faults change while connections are open.
//
//	p, err := faultnet.Listen("127.0.0.1:4222") // a NATS server
//	nats.Connect("nats://" + p.Addr())
//	p.Set(faultnet.Faults{Latency: 50 * time.Millisecond})
//	p.Set(faultnet.Faults{Cut: true}) // the client sees its connection reset
//	p.Set(faultnet.Faults{})          // it reconnects
//
// It is test support only: nothing outside _test.go files may import it.
package faultnet

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Faults are what a Proxy does to the bytes it forwards. The zero value
// forwards everything at once.
type Faults struct {
	// Latency delays every chunk by this much, each way (throughput is
	// kept: chunks are in flight together).
	Latency time.Duration
	// BytesPerSecond caps each direction of each connection; 0: no cap.
	BytesPerSecond int
	// Cut resets the open connections and closes new ones at once.
	Cut bool
	// HalfOpen forwards nothing: connections open now, and those accepted
	// while it is set, are read and their bytes dropped, and they are
	// never closed — not even when HalfOpen is cleared (a half-open TCP
	// connection does not heal). New connections after it is cleared work.
	HalfOpen bool
	// Deaf is HalfOpen one way: the client's bytes still reach the server,
	// the server's never come back (a write lands, its answer is lost).
	// Like HalfOpen it kills the connections it touches for good.
	Deaf bool
}

// Proxy forwards TCP connections on a loopback address to an upstream
// address, with Faults. Its methods are safe for concurrent use.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	faults Faults
	links  map[*link]struct{}
	closed bool
	done   chan struct{} // closed by Close
	wg     sync.WaitGroup
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	dead           chan struct{} // closed when the link went half-open
	deaf           chan struct{} // closed when the server's side went dead
	once, deafOnce sync.Once
}

func (l *link) kill()   { l.once.Do(func() { close(l.dead) }) }
func (l *link) deafen() { l.deafOnce.Do(func() { close(l.deaf) }) }
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func (l *link) close() {
	_ = l.client.Close()
	_ = l.server.Close()
}

// Listen starts a proxy on 127.0.0.1 (a free port) to upstream, a
// host:port or a URL ("nats://127.0.0.1:4222").
func Listen(upstream string) (*Proxy, error) {
	if _, rest, ok := strings.Cut(upstream, "://"); ok {
		upstream = rest
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: upstream, links: map[*link]struct{}{}, done: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// Faults returns the faults in force.
func (p *Proxy) Faults() Faults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

// Set changes the faults; they apply to open connections at once.
func (p *Proxy) Set(f Faults) {
	p.mu.Lock()
	p.faults = f
	var cut []*link
	for l := range p.links {
		switch {
		case f.Cut:
			cut = append(cut, l)
			delete(p.links, l)
		case f.HalfOpen:
			l.kill()
		case f.Deaf:
			l.deafen()
		}
	}
	p.mu.Unlock()
	for _, l := range cut {
		l.close()
	}
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	links := p.links
	p.links = map[*link]struct{}{}
	p.mu.Unlock()
	close(p.done)
	err := p.ln.Close()
	for l := range links {
		l.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve proxies one accepted connection.
func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	if f := p.Faults(); f.Cut {
		_ = c.Close()
		return
	}
	s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	l := &link{client: c, server: s, dead: make(chan struct{}), deaf: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.faults.Cut {
		p.mu.Unlock()
		l.close()
		return
	}
	if p.faults.HalfOpen {
		l.kill()
	}
	if p.faults.Deaf {
		l.deafen()
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { p.pump(l, c, s, l.dead) })
	wg.Go(func() { p.pump(l, s, c, l.deaf) })
	wg.Wait()
	p.mu.Lock()
	delete(p.links, l)
	p.mu.Unlock()
	l.close()
}

// chunk is bytes read at a time, to be written after its due time.
type chunk struct {
	b   []byte
	due time.Time
}

// pump forwards src to dst until either ends: a reader stamps each chunk
// with its due time, a writer waits for it and for the bandwidth. Nothing
// is forwarded once the link is dead, or this direction deaf.
func (p *Proxy) pump(l *link, src, dst net.Conn, deaf chan struct{}) {
	q := make(chan chunk, 64)
	go func() {
		defer close(q)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 && !closed(l.dead) && !closed(deaf) { // else the bytes vanish
				q <- chunk{b: append([]byte(nil), buf[:n]...), due: time.Now().Add(p.Faults().Latency)}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		if closed(l.dead) || closed(l.deaf) {
			<-p.done // a half-open connection is never closed by the proxy: neither side hears of the other's end
		}
		l.close() // either direction ending ends the link (the other reader then returns)
	}()
	for c := range q {
		if d := time.Until(c.due); d > 0 {
			time.Sleep(d) // the chunk's latency: in flight, not a wait for a condition
		}
		if closed(l.dead) || closed(deaf) {
			continue
		}
		if bps := p.Faults().BytesPerSecond; bps > 0 {
			time.Sleep(time.Duration(len(c.b)) * time.Second / time.Duration(bps)) // the chunk's time on the wire
		}
		if _, err := dst.Write(c.b); err != nil {
			l.close() // ends the reader, which closes q
			drain(q)
			return
		}
	}
}

func drain(q chan chunk) {
	for range q {
	}
}

// Group is one Proxy per upstream (a client's view of a NATS cluster),
// whose faults change together.
type Group struct {
	Proxies []*Proxy
}

// ListenAll starts a proxy to each upstream.
func ListenAll(upstreams []string) (*Group, error) {
	g := &Group{}
	for _, u := range upstreams {
		p, err := Listen(u)
		if err != nil {
			_ = g.Close()
			return nil, err
		}
		g.Proxies = append(g.Proxies, p)
	}
	return g, nil
}

// URL is the proxies' addresses as a NATS URL list
// ("nats://127.0.0.1:a,nats://127.0.0.1:b").
func (g *Group) URL() string {
	urls := make([]string, len(g.Proxies))
	for i, p := range g.Proxies {
		urls[i] = "nats://" + p.Addr()
	}
	return strings.Join(urls, ",")
}

// Set sets f on every proxy.
func (g *Group) Set(f Faults) {
	for _, p := range g.Proxies {
		p.Set(f)
	}
}

// Close closes every proxy.
func (g *Group) Close() error {
	var errs []error
	for _, p := range g.Proxies {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

var _ io.Closer = (*Proxy)(nil)
