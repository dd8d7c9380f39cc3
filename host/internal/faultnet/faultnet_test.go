package faultnet_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/skillhost/skillhost/host/internal/faultnet"
)

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func mustProxy(t *testing.T) *faultnet.Proxy {
	t.Helper()
	p, err := faultnet.Listen(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func mustDial(t *testing.T, p *faultnet.Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads it back within wait.
func roundTrip(c net.Conn, msg []byte, wait time.Duration) ([]byte, error) {
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len(msg))
	_, err := io.ReadFull(c, got)
	return got, err
}

// TestProxyForwards: without faults the bytes go through unchanged; with
// latency and a bandwidth cap they arrive whole, no sooner than the faults
// allow (lower bounds only: a slow machine can only add time).
func TestProxyForwards(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		faults faultnet.Faults
		size   int
		least  time.Duration
	}{
		{"none", faultnet.Faults{}, 100 << 10, 0},
		{"latency", faultnet.Faults{Latency: 100 * time.Millisecond}, 1 << 10, 200 * time.Millisecond}, // both ways
		{"bandwidth", faultnet.Faults{BytesPerSecond: 64 << 10}, 32 << 10, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := mustProxy(t)
			p.Set(tt.faults)
			c := mustDial(t, p)
			msg := bytes.Repeat([]byte("skillhost"), tt.size/9+1)[:tt.size]
			start := time.Now()
			got, err := roundTrip(c, msg, 30*time.Second)
			if err != nil || !bytes.Equal(got, msg) {
				t.Fatalf("round trip: %v (%d of %d bytes equal)", err, len(got), len(msg))
			}
			if took := time.Since(start); took < tt.least {
				t.Errorf("round trip took %v, want at least %v", took, tt.least)
			}
		})
	}
}

// TestProxyCut: a cut resets open connections and closes new ones; once
// restored, new connections work.
func TestProxyCut(t *testing.T) {
	t.Parallel()
	p := mustProxy(t)
	c := mustDial(t, p)
	if _, err := roundTrip(c, []byte("before"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(faultnet.Faults{Cut: true})
	if _, err := roundTrip(c, []byte("during"), 10*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an open connection through a cut: %v, want it closed", err)
	}
	if _, err := roundTrip(mustDial(t, p), []byte("new"), 10*time.Second); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a new connection through a cut: %v, want it closed", err)
	}
	p.Set(faultnet.Faults{})
	if got, err := roundTrip(mustDial(t, p), []byte("after"), 10*time.Second); err != nil || string(got) != "after" {
		t.Errorf("a new connection after the cut: %q, %v", got, err)
	}
}

// TestProxyHalfOpen: a half-open link takes bytes and answers nothing, and
// stays so after the fault is cleared; new connections then work.
func TestProxyHalfOpen(t *testing.T) {
	t.Parallel()
	p := mustProxy(t)
	old := mustDial(t, p)
	if _, err := roundTrip(old, []byte("before"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Set(faultnet.Faults{HalfOpen: true})
	for name, c := range map[string]net.Conn{"open": old, "new": mustDial(t, p)} {
		if _, err := roundTrip(c, []byte("lost"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s connection while half-open: %v, want no answer (and no close)", name, err)
		}
	}
	p.Set(faultnet.Faults{})
	if _, err := roundTrip(old, []byte("still"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the half-open connection after the fault cleared: %v, want it still dead", err)
	}
	if got, err := roundTrip(mustDial(t, p), []byte("fresh"), 10*time.Second); err != nil || string(got) != "fresh" {
		t.Errorf("a new connection after the fault cleared: %q, %v", got, err)
	}
}

// TestProxyDeaf: through a deaf link the client's bytes reach the server
// but nothing comes back, also after the fault is cleared; new connections
// then work.
func TestProxyDeaf(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					got <- string(buf[:n])
					_, _ = c.Write(buf[:n])
				}
			}()
		}
	}()
	p, err := faultnet.Listen(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := mustDial(t, p)
	p.Set(faultnet.Faults{Deaf: true})
	if _, err := roundTrip(c, []byte("lands"), 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("through a deaf link: %v, want no answer", err)
	}
	select {
	case s := <-got:
		if s != "lands" {
			t.Errorf("the server got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Error("the client's bytes did not reach the server")
	}
	p.Set(faultnet.Faults{})
	if got, err := roundTrip(mustDial(t, p), []byte("fresh"), 10*time.Second); err != nil || string(got) != "fresh" {
		t.Errorf("a new connection after the fault cleared: %q, %v", got, err)
	}
}
