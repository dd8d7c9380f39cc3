package hostfn

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
)

func TestFetchAllowedAndRefused(t *testing.T) {
	t.Parallel()
	srv := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Method", r.Method)
			w.Header().Add("X-Multi", "a")
			w.Header().Add("X-Multi", "b")
			fmt.Fprintf(w, "%s %s %s", r.Method, r.Header.Get("X-Token"), b)
		case "/hop":
			http.Redirect(w, r, "/echo", http.StatusFound)
		case "/escape":
			// Same server, but under a host name the plugin was not granted.
			http.Redirect(w, r, "http://localhost:"+strings.Split(r.Host, ":")[1]+"/echo", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/big":
			w.Write(make([]byte, 1025))
		case "/fat-headers":
			for i := range 100 {
				w.Header().Set(fmt.Sprintf("X-Fat-%d", i), strings.Repeat("x", 1000))
			}
		}
	})
	host, port := srv.hostPort(t)
	base := "http://" + host + ":" + port
	allowed := mustFuncs(t, Deps{Net: netPolicy(func(p *NetPolicy) { p.AllowPrivate = loopback; p.MaxResponseBytes = 1024; p.MaxRedirects = 5 })}, host+":"+port)
	noPrivate := mustFuncs(t, Deps{Net: netPolicy(func(*NetPolicy) {})}, host+":"+port)
	defaultPorts := mustFuncs(t, Deps{Net: netPolicy(func(p *NetPolicy) { p.AllowPrivate = loopback })}, host)

	t.Run("GET through allow_private", func(t *testing.T) {
		t.Parallel()
		res, gerr := doFetch(t, allowed, fetchRequest{URL: base + "/echo", Headers: map[string]string{"x-token": "t1"}})
		if gerr != nil {
			t.Fatalf("fetch: %v", gerr)
		}
		want := fetchResult{Status: 200, Body: []byte("GET t1 ")}
		got := fetchResult{Status: res.Status, Body: res.Body}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("response (-want +got):\n%s", diff)
		}
		if res.Headers["X-Multi"] != "a, b" {
			t.Errorf("X-Multi = %q, want repeated headers joined", res.Headers["X-Multi"])
		}
	})
	t.Run("POST body and HEAD", func(t *testing.T) {
		t.Parallel()
		res, gerr := doFetch(t, allowed, fetchRequest{Method: "post", URL: base + "/echo", Body: []byte("hello")})
		if gerr != nil || string(res.Body) != "POST  hello" {
			t.Fatalf("POST = %q, %v", res.Body, gerr)
		}
		res, gerr = doFetch(t, allowed, fetchRequest{Method: "HEAD", URL: base + "/echo"})
		if gerr != nil || res.Headers["X-Method"] != "HEAD" || len(res.Body) != 0 {
			t.Fatalf("HEAD = %+v, %v", res, gerr)
		}
	})
	t.Run("redirect within the grant is followed", func(t *testing.T) {
		t.Parallel()
		res, gerr := doFetch(t, allowed, fetchRequest{URL: base + "/hop"})
		if gerr != nil || string(res.Body) != "GET  " {
			t.Fatalf("fetch /hop = %q, %v", res.Body, gerr)
		}
	})

	refusals := []struct {
		name string
		f    *funcs
		req  fetchRequest
		code string
	}{
		{"loopback without allow_private", noPrivate, fetchRequest{URL: base + "/echo"}, fault.GuestAddressRefused},
		{"redirect to an ungranted host", allowed, fetchRequest{URL: base + "/escape"}, fault.GuestHostNotAllowed},
		{"redirect loop", allowed, fetchRequest{URL: base + "/loop"}, fault.GuestFetchFailed},
		{"body over the cap", allowed, fetchRequest{URL: base + "/big"}, fault.GuestResponseTooLarge},
		{"headers over the cap", allowed, fetchRequest{URL: base + "/fat-headers"}, fault.GuestResponseTooLarge},
		{"ungranted host", allowed, fetchRequest{URL: "http://localhost:" + port + "/echo"}, fault.GuestHostNotAllowed},
		{"entry without a port: other ports refused", defaultPorts, fetchRequest{URL: base + "/echo"}, fault.GuestHostNotAllowed},
		{"non-ASCII host", allowed, fetchRequest{URL: "http://exämple.com/"}, fault.GuestHostNotAllowed},
		{"file scheme", allowed, fetchRequest{URL: "file:///etc/passwd"}, fault.GuestBadRequest},
		{"user info", allowed, fetchRequest{URL: "http://u:p@" + host + ":" + port + "/echo"}, fault.GuestBadRequest},
		{"PUT", allowed, fetchRequest{Method: "PUT", URL: base + "/echo"}, fault.GuestBadRequest},
		{"GET with body", allowed, fetchRequest{URL: base + "/echo", Body: []byte("x")}, fault.GuestBadRequest},
		{"POST body over the cap", allowed, fetchRequest{Method: "POST", URL: base + "/echo", Body: make([]byte, MaxFetchBody+1)}, fault.GuestRequestTooLarge},
		{"Host header", allowed, fetchRequest{URL: base + "/echo", Headers: map[string]string{"host": "evil"}}, fault.GuestBadRequest},
		{"Transfer-Encoding header", allowed, fetchRequest{URL: base + "/echo", Headers: map[string]string{"Transfer-Encoding": "chunked"}}, fault.GuestBadRequest},
		{"header injection", allowed, fetchRequest{URL: base + "/echo", Headers: map[string]string{"X-A": "1\r\nX-B: 2"}}, fault.GuestBadRequest},
		{"bad header name", allowed, fetchRequest{URL: base + "/echo", Headers: map[string]string{"X A": "1"}}, fault.GuestBadRequest},
		{"URL over the cap", allowed, fetchRequest{URL: base + "/" + strings.Repeat("a", MaxFetchURL)}, fault.GuestBadRequest},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, gerr := doFetch(t, tt.f, tt.req)
			if gerr == nil || gerr.Code != tt.code {
				t.Fatalf("fetch = %v, want code %s", gerr, tt.code)
			}
		})
	}
}

func TestFetchLoopbackRefusedSendsNothing(t *testing.T) {
	t.Parallel()
	srv := newFixture(t, func(w http.ResponseWriter, r *http.Request) {})
	host, port := srv.hostPort(t)
	f := mustFuncs(t, Deps{Net: netPolicy(func(*NetPolicy) {})}, host+":"+port)
	_, gerr := doFetch(t, f, fetchRequest{URL: "http://" + host + ":" + port + "/x"})
	if gerr == nil || gerr.Code != fault.GuestAddressRefused {
		t.Fatalf("fetch = %v, want %s", gerr, fault.GuestAddressRefused)
	}
	if n := srv.hitCount("/x"); n != 0 {
		t.Errorf("the refused fixture was hit %d times", n)
	}
}

func TestFetchRedirectRefusedBeforeRequest(t *testing.T) {
	t.Parallel()
	target := newFixture(t, func(w http.ResponseWriter, r *http.Request) {})
	_, tport := target.hostPort(t)
	origin := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+tport+"/secret", http.StatusFound)
	})
	host, port := origin.hostPort(t)
	f := mustFuncs(t, Deps{Net: netPolicy(func(p *NetPolicy) { p.AllowPrivate = loopback; p.MaxRedirects = 5 })}, host+":"+port)
	_, gerr := doFetch(t, f, fetchRequest{URL: "http://" + host + ":" + port + "/go"})
	if gerr == nil || gerr.Code != fault.GuestHostNotAllowed {
		t.Fatalf("fetch = %v, want %s", gerr, fault.GuestHostNotAllowed)
	}
	if n := target.hitCount("/secret"); n != 0 {
		t.Errorf("the ungranted redirect target was hit %d times", n)
	}
}

// TestFetchDialGuardBeforeConnect asks for internal addresses the grant
// names explicitly: the dial guard refuses them before connect(2), so no
// packet leaves the machine (the addresses are not routed in the test
// environment; the refusal comes back immediately, not as a timeout).
func TestFetchDialGuardBeforeConnect(t *testing.T) {
	t.Parallel()
	f := mustFuncs(t, Deps{Net: netPolicy(func(p *NetPolicy) { p.AllowPrivate = loopback; p.Timeout = 5 * time.Second })},
		"10.0.0.1", "169.254.169.254", "fd00:ec2::254", "0.0.0.0:1", "100.64.0.1")
	for _, u := range []string{
		"http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/",
		"http://0.0.0.0:1/", "http://100.64.0.1/",
	} {
		t.Run(u, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, gerr := doFetch(t, f, fetchRequest{URL: u})
			if gerr == nil || gerr.Code != fault.GuestAddressRefused {
				t.Fatalf("fetch %s = %v, want %s", u, gerr, fault.GuestAddressRefused)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("refusal took %v: the guard must act before connecting", d)
			}
		})
	}
}

func TestFetchTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	host, port := srv.hostPort(t)
	f := mustFuncs(t, Deps{Net: netPolicy(func(p *NetPolicy) { p.AllowPrivate = loopback; p.Timeout = 200 * time.Millisecond })}, host+":"+port)
	_, gerr := doFetch(t, f, fetchRequest{URL: "http://" + host + ":" + port + "/slow"})
	if gerr == nil || gerr.Code != fault.GuestTimeout {
		t.Fatalf("fetch = %v, want %s", gerr, fault.GuestTimeout)
	}
}

// NetPolicyOf parses net.allow_private: an address is a one-address prefix,
// anything else is an error naming the key.
func TestNetPolicyOf(t *testing.T) {
	t.Parallel()
	n := config.Defaults().Net
	n.AllowPrivate = []string{"10.0.0.0/8", "127.0.0.1", "::1"}
	got, err := NetPolicyOf(n)
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("::1/128")}
	if diff := cmp.Diff(want, got.AllowPrivate, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("allow_private (-want +got):\n%s", diff)
	}
	if got.Timeout != n.Timeout || got.MaxResponseBytes != int64(n.MaxResponse) || got.MaxRedirects != n.MaxRedirects {
		t.Errorf("NetPolicyOf(%+v) = %+v", n, got)
	}
	n.AllowPrivate = []string{"not-an-address"}
	if _, err := NetPolicyOf(n); err == nil || !strings.Contains(err.Error(), "net.allow_private") {
		t.Errorf("NetPolicyOf(not-an-address) = %v, want an error naming net.allow_private", err)
	}
	if got := (NetPolicy{MaxRedirects: -1}).checked().MaxRedirects; got != 0 {
		t.Errorf("MaxRedirects -1 → %d, want 0 (no redirects)", got)
	}
}

// netPolicy is the default net.* policy with edit applied.
func netPolicy(edit func(*NetPolicy)) NetPolicy {
	p, err := NetPolicyOf(config.Defaults().Net)
	if err != nil {
		panic(err)
	}
	edit(&p)
	return p
}

// TestFetchMaxRedirects: net.max_redirects N follows exactly N redirects;
// 0 follows none.
func TestFetchMaxRedirects(t *testing.T) {
	t.Parallel()
	// /r/N redirects to /r/N-1; /r/0 answers "arrived".
	srv := newFixture(t, func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/"))
		if err != nil || n == 0 {
			_, _ = io.WriteString(w, "arrived")
			return
		}
		http.Redirect(w, r, "/r/"+strconv.Itoa(n-1), http.StatusFound)
	})
	host, port := srv.hostPort(t)
	tests := []struct {
		max, hops int
		wantOK    bool
	}{
		{0, 0, true},
		{0, 1, false},
		{1, 1, true},
		{1, 2, false},
		{5, 5, true},
		{5, 6, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("max %d hops %d", tt.max, tt.hops), func(t *testing.T) {
			t.Parallel()
			f := mustFuncs(t, Deps{Net: netPolicy(func(p *NetPolicy) { p.AllowPrivate = loopback; p.MaxRedirects = tt.max })}, host+":"+port)
			res, gerr := doFetch(t, f, fetchRequest{URL: fmt.Sprintf("http://%s:%s/r/%d", host, port, tt.hops)})
			if tt.wantOK {
				if gerr != nil || string(res.Body) != "arrived" {
					t.Fatalf("fetch = %+v, %v; want the final page", res, gerr)
				}
				return
			}
			if gerr == nil || gerr.Code != fault.GuestFetchFailed || !strings.Contains(gerr.Message, "redirects") {
				t.Fatalf("fetch = %+v, %v; want %s naming the redirects", res, gerr, fault.GuestFetchFailed)
			}
		})
	}
}

// TestFetchErrorsHideHostInternals: the messages a plugin gets for DNS and
// connection failures name only the host and port it asked for, never the
// host's DNS resolver, the address dialed or a system error's text.
func TestFetchErrorsHideHostInternals(t *testing.T) {
	t.Parallel()
	// A resolver whose server (the address it would show) is a closed
	// local UDP port: every lookup fails after naming it.
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resolverAddr := dead.LocalAddr().String()
	dead.Close()
	var dialed atomic.Value
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		dialed.Store(address)
		var d net.Dialer
		return d.DialContext(ctx, "udp", resolverAddr)
	}}
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	f := mustFuncs(t, Deps{Net: netPolicy(func(p *NetPolicy) { p.AllowPrivate = loopback; p.Resolver = resolver; p.Timeout = 5 * time.Second })},
		"nowhere.example", closedAddr)

	tests := []struct {
		url  string
		want string
	}{
		{"http://nowhere.example/", `host "nowhere.example" could not be resolved (DNS)`},
		{"http://" + closedAddr + "/", "connection to " + closedAddr + " refused"},
	}
	for _, tt := range tests {
		_, gerr := doFetch(t, f, fetchRequest{URL: tt.url})
		if gerr == nil || gerr.Code != fault.GuestFetchFailed || gerr.Message != tt.want {
			t.Errorf("fetch %s = %+v, want %s %q", tt.url, gerr, fault.GuestFetchFailed, tt.want)
			continue
		}
		for _, secret := range []string{resolverAddr, "lookup", "dial", "udp", "read:", "127.0.0.53"} {
			if s, _ := dialed.Load().(string); strings.Contains(gerr.Message, secret) || (s != "" && strings.Contains(gerr.Message, s)) {
				t.Errorf("fetch %s: message %q shows host internals (%q or the resolver %q)", tt.url, gerr.Message, secret, s)
			}
		}
	}
	if dialed.Load() == nil {
		t.Error("the test resolver was never used")
	}
}

// TestFetchRefusalNamesTheHostNotTheAddress: a granted name that resolves
// to an internal address is refused with a message naming the host and the
// rule (what the plugin asked for), never the address it resolved to.
func TestFetchRefusalNamesTheHostNotTheAddress(t *testing.T) {
	t.Parallel()
	srv := newFixture(t, func(w http.ResponseWriter, r *http.Request) {})
	_, port := srv.hostPort(t)
	f := mustFuncs(t, Deps{Net: netPolicy(func(*NetPolicy) {})}, "localhost:"+port)
	_, gerr := doFetch(t, f, fetchRequest{URL: "http://localhost:" + port + "/x"})
	if gerr == nil || gerr.Code != fault.GuestAddressRefused {
		t.Fatalf("fetch = %v, want %s", gerr, fault.GuestAddressRefused)
	}
	for _, want := range []string{`host "localhost"`, "loopback", "net.allow_private"} {
		if !strings.Contains(gerr.Message, want) {
			t.Errorf("message %q lacks %q", gerr.Message, want)
		}
	}
	for _, leak := range []string{"127.0.0.1", "::1"} {
		if strings.Contains(gerr.Message, leak) {
			t.Errorf("message %q shows the resolved address %s", gerr.Message, leak)
		}
	}
}
