package hostfn_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/hostfn"
	"github.com/skillhost/skillhost/host/internal/store"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

// storeValueCap is the context value cap of the test store (kept small so the
// hostile-size test is cheap).
const storeValueCap = 4 << 10

func mustStore(t *testing.T, sessions ...string) *store.Store {
	t.Helper()
	st, err := store.Open(t.Context(), store.Config{DataDir: t.TempDir(), Store: valueCap(storeValueCap)})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	for _, id := range sessions {
		if _, err := st.CreateSession(t.Context(), store.Session{ID: id, AgentID: "agent"}); err != nil {
			t.Fatalf("CreateSession(%s): %v", id, err)
		}
	}
	return st
}

func TestGuestContextIsolation(t *testing.T) {
	t.Parallel()
	st := mustStore(t, "sess-a", "sess-b")
	in := mustCompile(t, hostfn.Deps{Context: st}, hostfn.Grant{Plugin: "ctx-plugin"}).mustInstance(t)
	a := as(auth.Invocation{SessionID: "sess-a"}, &hostfn.Call{Plugin: "ctx-plugin", Skill: "s"})
	b := as(auth.Invocation{SessionID: "sess-b"}, &hostfn.Call{Plugin: "ctx-plugin", Skill: "s"})

	if _, gerr := in.call(a, "ctx_set", map[string]any{"key": "k", "value": map[string]int{"n": 1}}); gerr != nil {
		t.Fatalf("A set: %+v", gerr)
	}
	get := func(c *hostfn.Call, key string) (string, *guestError) {
		out, gerr := in.call(c, "ctx_get", map[string]string{"key": key})
		return string(out), gerr
	}
	tests := []struct {
		name string
		call *hostfn.Call
		key  string
		want string
		code string
	}{
		{"A reads its own key", a, "k", `{"found":true,"value":{"n":1}}`, ""},
		{"B cannot see A's key", b, "k", `{"found":false,"value":null}`, ""},
		{"A: unknown key", a, "other", `{"found":false,"value":null}`, ""},
		{"no session", &hostfn.Call{Plugin: "ctx-plugin"}, "k", "", fault.GuestNoSession},
		{"unknown session", as(auth.Invocation{SessionID: "sess-x"}, &hostfn.Call{}), "k", "", fault.GuestSessionNotFound},
		{"empty key", a, "", "", fault.GuestBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gerr := get(tt.call, tt.key)
			if tt.code != "" {
				if gerr == nil || gerr.Code != tt.code {
					t.Fatalf("get = %s, %+v; want code %s", got, gerr, tt.code)
				}
				return
			}
			if gerr != nil {
				t.Fatalf("get: %+v", gerr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("get (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("B writing the same key leaves A's value alone", func(t *testing.T) {
		if _, gerr := in.call(b, "ctx_set", map[string]any{"key": "k", "value": "bee"}); gerr != nil {
			t.Fatalf("B set: %+v", gerr)
		}
		got, _ := get(a, "k")
		if got != `{"found":true,"value":{"n":1}}` {
			t.Errorf("A's value after B's write = %s", got)
		}
	})
	t.Run("ttl expires", func(t *testing.T) {
		if _, gerr := in.call(a, "ctx_set", map[string]any{"key": "short", "value": 1, "ttl_ms": 1}); gerr != nil {
			t.Fatalf("set: %+v", gerr)
		}
		testutil.Eventually(t, 10*time.Second, "the 1ms value to read as expired", func() bool {
			got, _ := get(a, "short")
			return got == `{"found":false,"value":null}`
		})
	})
	t.Run("value over the store cap", func(t *testing.T) {
		big := strings.Repeat("x", storeValueCap)
		_, gerr := in.call(a, "ctx_set", map[string]any{"key": "big", "value": big})
		if gerr == nil || gerr.Code != fault.GuestValueTooLarge {
			t.Fatalf("set a value over the store cap = %+v, want %s", gerr, fault.GuestValueTooLarge)
		}
	})
	t.Run("no store configured", func(t *testing.T) {
		in := mustCompile(t, hostfn.Deps{}, hostfn.Grant{Plugin: "p"}).mustInstance(t)
		_, gerr := in.call(a, "ctx_get", map[string]string{"key": "k"})
		if gerr == nil || gerr.Code != fault.GuestUnavailable {
			t.Fatalf("get = %+v, want %s", gerr, fault.GuestUnavailable)
		}
	})
}

func TestGuestFetch(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	allowPrivate := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	granted := mustCompile(t, hostfn.Deps{Net: netPolicy(func(p *hostfn.NetPolicy) { p.AllowPrivate = allowPrivate })},
		hostfn.Grant{Plugin: "net", AllowedHosts: []string{u.Host}}).mustInstance(t)
	noPrivate := mustCompile(t, hostfn.Deps{Net: netPolicy(func(*hostfn.NetPolicy) {})},
		hostfn.Grant{Plugin: "net", AllowedHosts: []string{u.Host}}).mustInstance(t)
	call := &hostfn.Call{Plugin: "net"}

	out, gerr := granted.call(call, "fetch", map[string]string{"url": srv.URL + "/hello"})
	if gerr != nil {
		t.Fatalf("allowed fetch: %+v", gerr)
	}
	var resp struct {
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    []byte            `json:"body"`
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Status != 200 || string(resp.Body) != `{"path":"/hello"}` || resp.Headers["Content-Type"] != "application/json" {
		t.Errorf("allowed fetch = %d %q %v", resp.Status, resp.Body, resp.Headers)
	}

	refused := []struct {
		name string
		in   *instance
		url  string
		code string
	}{
		{"loopback without allow_private", noPrivate, srv.URL + "/x", fault.GuestAddressRefused},
		{"host outside the grant", granted, "http://localhost:" + u.Port() + "/x", fault.GuestHostNotAllowed},
		{"metadata address", granted, "http://169.254.169.254/latest/meta-data/", fault.GuestHostNotAllowed},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, gerr := tt.in.call(call, "fetch", map[string]string{"url": tt.url})
			if gerr == nil || gerr.Code != tt.code {
				t.Fatalf("fetch %s = %+v, want code %s", tt.url, gerr, tt.code)
			}
		})
	}
}

func TestGuestProgress(t *testing.T) {
	t.Parallel()
	in := mustCompile(t, hostfn.Deps{}, hostfn.Grant{Plugin: "p"}).mustInstance(t)
	var (
		mu  sync.Mutex
		got []hostfn.Progress
	)
	call := &hostfn.Call{Plugin: "p", Progress: progressFunc(func(p hostfn.Progress) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, p)
	})}
	for _, p := range []map[string]any{
		{"percent": 50, "message": "half", "data": map[string]int{"step": 2}},
		{"percent": 150, "message": strings.Repeat("m", 5000)},
		{"percent": -3},
	} {
		if _, gerr := in.call(call, "progress_it", p); gerr != nil {
			t.Fatalf("progress %v: %+v", p, gerr)
		}
	}
	want := []hostfn.Progress{
		{Percent: 50, Message: "half", Data: json.RawMessage(`{"step":2}`)},
		{Percent: 100, Message: strings.Repeat("m", hostfn.MaxProgressMessage-len("…")) + "…"},
		{Percent: 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress delivered (-want +got):\n%s", diff)
	}
	t.Run("no listener is not an error", func(t *testing.T) {
		if _, gerr := in.call(&hostfn.Call{}, "progress_it", map[string]any{"percent": 1}); gerr != nil {
			t.Fatalf("progress without listener: %+v", gerr)
		}
	})
	t.Run("data over the cap", func(t *testing.T) {
		_, gerr := in.call(call, "progress_it", map[string]any{"percent": 1, "data": strings.Repeat("d", hostfn.MaxProgressData)})
		if gerr == nil || gerr.Code != fault.GuestRequestTooLarge {
			t.Fatalf("progress with big data = %+v, want %s", gerr, fault.GuestRequestTooLarge)
		}
	})
}

// pluginRecords returns the log records a plugin wrote (source=plugin).
func pluginRecords(t *testing.T, logs *testutil.LogBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(strings.NewReader(logs.String()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m["source"] == "plugin" {
			delete(m, "time")
			out = append(out, m)
		}
	}
	return out
}

func TestGuestLog(t *testing.T) {
	t.Parallel()
	var sink testutil.LogBuffer
	logger := slog.New(slog.NewJSONHandler(&sink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	in := mustCompile(t, hostfn.Deps{Logger: logger}, hostfn.Grant{Plugin: "logger-plugin"}).mustInstance(t)
	call := as(auth.Invocation{SessionID: "sess-1", RequestID: "req-9"}, &hostfn.Call{Plugin: "logger-plugin", Skill: "shout"})
	if _, gerr := in.call(call, "log_it", map[string]any{"level": 2, "msg": "hello from the guest"}); gerr != nil {
		t.Fatalf("log: %+v", gerr)
	}
	want := []map[string]any{{
		"level": "WARN", "msg": "hello from the guest", "source": "plugin",
		"plugin": "logger-plugin", "skill": "shout", "session_id": "sess-1", "request_id": "req-9",
	}}
	if diff := cmp.Diff(want, pluginRecords(t, &sink)); diff != "" {
		t.Errorf("log record (-want +got):\n%s", diff)
	}

	t.Run("long message is cut", func(t *testing.T) {
		var sink testutil.LogBuffer
		in := mustCompile(t, hostfn.Deps{Logger: slog.New(slog.NewJSONHandler(&sink, nil))}, hostfn.Grant{Plugin: "p"}).mustInstance(t)
		if _, gerr := in.call(&hostfn.Call{}, "log_it", map[string]any{"level": 1, "msg": strings.Repeat("é", 10000)}); gerr != nil {
			t.Fatalf("log: %+v", gerr)
		}
		recs := pluginRecords(t, &sink)
		if len(recs) != 1 || len(recs[0]["msg"].(string)) > hostfn.MaxLogMessage {
			t.Fatalf("records = %d, message length %d, want one of at most %d bytes", len(recs), len(recs[0]["msg"].(string)), hostfn.MaxLogMessage)
		}
	})
	t.Run("flood is rate-limited", func(t *testing.T) {
		var sink testutil.LogBuffer
		in := mustCompile(t, hostfn.Deps{Logger: slog.New(slog.NewJSONHandler(&sink, nil))}, hostfn.Grant{Plugin: "p"}).mustInstance(t)
		if _, gerr := in.call(&hostfn.Call{}, "log_it", map[string]any{"level": 1, "msg": "spam", "times": 300}); gerr != nil {
			t.Fatalf("log flood must not fail the skill: %+v", gerr)
		}
		// The burst plus whatever refilled while the guest ran (20/s).
		if n := len(pluginRecords(t, &sink)); n < hostfn.LogBurst || n > 250 {
			t.Errorf("%d of 300 lines logged, want about the burst of %d", n, hostfn.LogBurst)
		}
	})
}

// valueCap is the default store.* section with store.max_value set to n.
func valueCap(n config.ByteSize) config.Store {
	c := config.Defaults().Store
	c.MaxValue = n
	return c
}

// netPolicy is the default net.* policy with edit applied.
func netPolicy(edit func(*hostfn.NetPolicy)) hostfn.NetPolicy {
	p, err := hostfn.NetPolicyOf(config.Defaults().Net)
	if err != nil {
		panic(err)
	}
	edit(&p)
	return p
}
