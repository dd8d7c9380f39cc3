package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/auth"
)

const (
	ciKey   = "ci-key-0123456789abcdef0123456789abcdef"
	textKey = "text-key-0123456789abcdef0123456789abcde"
)

func mustKeys(t *testing.T, specs ...auth.KeySpec) *auth.KeySet {
	t.Helper()
	ks, err := auth.NewKeySet(specs, testLimits(t))
	if err != nil {
		t.Fatalf("NewKeySet: %v", err)
	}
	return ks
}

// wantFault checks err's kind and reason ("" = any reason; KindOf(nil) fails).
func wantFault(t *testing.T, err error, kind fault.Kind, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v/%s", kind, reason)
	}
	fe := fault.From(err)
	if fe.Kind != kind || (reason != "" && fe.Reason != reason) {
		t.Fatalf("got %v/%s (%v), want %v/%s", fe.Kind, fe.Reason, err, kind, reason)
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		glob, name string
		want       bool
	}{
		{"*", "", true},
		{"*", "a/b/c", true},
		{"upper*", "uppercase", true},
		{"upper*", "lower", false},
		{"_cleveragents/*", "_cleveragents/plan/create", true},
		{"_cleveragents/plan/*", "_cleveragents/session/create", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*case", "uppercase", true},
		{"u*e*e", "uppercase", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 200), false}, // no exponential backtracking
	}
	for _, tt := range tests {
		if got := auth.Match(tt.glob, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.glob, tt.name, got, tt.want)
		}
	}
}

func TestParseScopeAndRate(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"*", "skill:upper*", "agent:text-tools", "method:_cleveragents/plan/*"} {
		sc, err := auth.ParseScope(s)
		if err != nil || sc.String() != s {
			t.Errorf("ParseScope(%q) = %v, %v", s, sc, err)
		}
	}
	for _, s := range []string{"", "skill:", "plan:x", "skill:a b", "all", "skill:\x00"} {
		if _, err := auth.ParseScope(s); err == nil {
			t.Errorf("ParseScope(%q) accepted", s)
		}
	}
	for in, want := range map[string]auth.Rate{"100/s": {N: 100, Period: time.Second}, "60/m": {N: 60, Period: time.Minute}, "5/h": {N: 5, Period: time.Hour}, "": {}} {
		got, err := auth.ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"0/s", "-1/s", "10", "10/d", "x/s", "2000000/s"} {
		if _, err := auth.ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) accepted", in)
		}
	}
}

func TestNewKeySetRefusesBadEntries(t *testing.T) {
	t.Parallel()
	good := auth.KeySpec{ID: "ci", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}}
	tests := []struct {
		name  string
		specs []auth.KeySpec
		want  string
	}{
		{"duplicate id", []auth.KeySpec{good, {ID: "ci", SHA256: auth.Digest(textKey), Scopes: []string{"*"}}}, "used twice"},
		{"duplicate key", []auth.KeySpec{good, {ID: "other", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}}}, "the same key as"},
		{"short digest", []auth.KeySpec{{ID: "x", SHA256: "9f86d081", Scopes: []string{"*"}}}, "64 hex digits"},
		{"no scopes", []auth.KeySpec{{ID: "x", SHA256: auth.Digest(ciKey)}}, "at least one scope"},
		{"bad scope", []auth.KeySpec{{ID: "x", SHA256: auth.Digest(ciKey), Scopes: []string{"plan:*"}}}, "scopes[0]"},
		{"bad rate", []auth.KeySpec{{ID: "x", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}, Rate: "fast"}}, "auth.keys[0].rate"},
		{"bad id", []auth.KeySpec{{ID: "a b", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}}}, "auth.keys[0].id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := auth.NewKeySet(tt.specs, testLimits(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// tokenStore is an in-memory TokenStore (the real one is the session store,
// exercised over HTTP in host/).
type tokenStore map[string]auth.TokenRecord

func (ts tokenStore) SessionToken(_ context.Context, id string) (auth.TokenRecord, error) {
	rec, ok := ts[id]
	if !ok {
		return rec, fault.New(fault.SessionNotFound, fault.ReasonSessionNotFound, "no session")
	}
	return rec, nil
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t,
		auth.KeySpec{ID: "ci", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}},
		auth.KeySpec{ID: "text", SHA256: strings.ToUpper(auth.Digest(textKey)), Scopes: []string{"skill:upper*"}, Rate: "5/s"})
	live, liveHash := auth.NewToken("s-live")
	closed, closedHash := auth.NewToken("s-closed")
	orphan, orphanHash := auth.NewToken("s-orphan")
	store := tokenStore{
		"s-live":   {Owner: "key:text", SHA256: liveHash, Active: true},
		"s-closed": {Owner: "key:text", SHA256: closedHash, Active: false},
		"s-orphan": {Owner: "key:gone", SHA256: orphanHash, Active: true},
	}
	forged := live[:len(live)-2] + "AA"
	authn := auth.NewAuthenticator(ks, store)
	tests := []struct {
		name      string
		cred      string
		wantErr   string // reason
		wantOwner string
	}{
		{"key", ciKey, "", "key:ci"},
		{"second key, upper-case digest in config", textKey, "", "key:text"},
		{"no credential", "", fault.ReasonUnauthenticated, ""},
		{"wrong key, same length", strings.Repeat("x", len(ciKey)), fault.ReasonInvalidCredentials, ""},
		{"wrong key, other length", "short", fault.ReasonInvalidCredentials, ""},
		{"key with a trailing byte", ciKey + "x", fault.ReasonInvalidCredentials, ""},
		{"oversized", strings.Repeat("k", auth.MaxCredentialBytes+1), fault.ReasonInvalidCredentials, ""},
		{"session token", live, "", "key:text"},
		{"forged token for a live session", forged, fault.ReasonInvalidCredentials, ""},
		{"token of a closed session", closed, fault.ReasonTokenRevoked, ""},
		{"token whose key is gone", orphan, fault.ReasonInvalidCredentials, ""},
		{"token for an unknown session", auth.TokenPrefix + "bm9uZQ.AAAA", fault.ReasonInvalidCredentials, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := authn.Authenticate(context.Background(), tt.cred)
			if tt.wantErr != "" {
				wantFault(t, err, fault.Unauthorized, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Owner() != tt.wantOwner {
				t.Errorf("owner = %q, want %q", p.Owner(), tt.wantOwner)
			}
		})
	}
	tok, err := authn.Authenticate(context.Background(), live)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Kind() != auth.KindToken || tok.Session() != "s-live" || tok.Limits().Rate.N != 5 {
		t.Errorf("token principal = %v (session %q, limits %+v)", tok, tok.Session(), tok.Limits())
	}
	off := auth.NewAuthenticator(mustKeys(t), nil)
	if off.Enabled() {
		t.Error("an empty key set enables authentication")
	}
	if _, err := off.Authenticate(context.Background(), ciKey); err == nil {
		t.Error("a key was accepted with no keys configured")
	}
}

func TestCredential(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		authz  []string
		apiKey string
		want   string
		bad    bool
	}{
		{"bearer", []string{"Bearer k1"}, "", "k1", false},
		{"scheme is case-insensitive", []string{"bEaReR k1"}, "", "k1", false},
		{"x-api-key", nil, "k1", "k1", false},
		{"both, equal", []string{"Bearer k1"}, "k1", "k1", false},
		{"none", nil, "", "", false},
		{"both, different", []string{"Bearer k1"}, "k2", "", true},
		{"basic scheme", []string{"Basic azE6"}, "", "", true},
		{"two headers", []string{"Bearer k1", "Bearer k1"}, "", "", true},
		{"empty bearer", []string{"Bearer "}, "", "", true},
	}
	for _, tt := range tests {
		got, err := auth.Credential(tt.authz, tt.apiKey)
		if tt.bad {
			wantFault(t, err, fault.Unauthorized, fault.ReasonInvalidCredentials)
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: Credential = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestScopeTable(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t,
		auth.KeySpec{ID: "all", SHA256: auth.Digest("k-all"), Scopes: []string{"*"}},
		auth.KeySpec{ID: "upper", SHA256: auth.Digest("k-upper"), Scopes: []string{"skill:upper*"}},
		auth.KeySpec{ID: "tools", SHA256: auth.Digest("k-tools"), Scopes: []string{"agent:text-tools"}},
		auth.KeySpec{ID: "planner", SHA256: auth.Digest("k-planner"), Scopes: []string{"method:_cleveragents/plan/*", "skill:echo"}},
		auth.KeySpec{ID: "metrics", SHA256: auth.Digest("k-metrics"), Scopes: []string{"method:metrics"}})
	p := func(id string) auth.Principal {
		pr, ok := ks.Principal(id)
		if !ok {
			t.Fatalf("no key %s", id)
		}
		return pr
	}
	type check struct {
		who     auth.Principal
		method  string
		plugin  string // skill check when skill != ""
		skill   string
		allowed bool
	}
	tests := []check{
		{p("all"), "anything/at/all", "", "", true},
		{p("upper"), "_cleveragents/session/create", "", "", true},
		{p("upper"), "ListTasks", "", "", true},
		{p("upper"), "_cleveragents/skill/execute", "text-tools", "uppercase", true},
		{p("upper"), "_cleveragents/skill/execute", "text-tools", "reverse", false},
		{p("upper"), "SendMessage", "text-tools", "uppercase", true},
		{p("upper"), "_cleveragents/plan/create", "", "", false},
		{p("upper"), "metrics", "", "", false},
		{p("tools"), "_cleveragents/agent/call", "text-tools", "reverse", true},
		{p("tools"), "_cleveragents/skill/execute", "math", "add", false},
		{p("planner"), "_cleveragents/plan/create", "tools", "echo", true},
		{p("planner"), "_cleveragents/plan/execute", "tools", "uppercase", false},
		{p("metrics"), "metrics", "", "", true},
		{p("metrics"), "_cleveragents/skill/execute", "", "", false},
		{auth.Local("stdio"), "_cleveragents/plan/create", "tools", "anything", true},
		{auth.Principal{}, "_cleveragents/session/create", "", "", false},
	}
	for _, tt := range tests {
		err := tt.who.AllowMethod(tt.method, "")
		if err == nil && tt.skill != "" {
			err = tt.who.AllowSkill(tt.plugin, tt.skill)
		}
		if (err == nil) != tt.allowed {
			t.Errorf("%v calling %s (%s/%s): err = %v, want allowed=%v", tt.who, tt.method, tt.plugin, tt.skill, err, tt.allowed)
		}
		if err != nil && tt.who.Kind() != auth.KindNone {
			wantFault(t, err, fault.Forbidden, fault.ReasonScopeDenied)
		}
	}
	if err := (auth.Principal{}).AllowMethod("GetTask", ""); !errors.Is(err, fault.ErrUnauthorized) {
		t.Errorf("no principal: %v, want Unauthorized", err)
	}
}

func TestTokenPrincipalIsBoundToItsSession(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, auth.KeySpec{ID: "ci", SHA256: auth.Digest(ciKey), Scopes: []string{"*"}})
	tok, hash := auth.NewToken("s1")
	p, err := auth.NewAuthenticator(ks, tokenStore{"s1": {Owner: "key:ci", SHA256: hash, Active: true}}).
		Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method, session string
		ok              bool
	}{
		{"_cleveragents/context/get", "s1", true},
		{"_cleveragents/skill/execute", "s1", true},
		{"_cleveragents/session/close", "s1", true},
		{"_cleveragents/context/get", "s2", false},
		{"_cleveragents/session/create", "s1", false},
		{"_cleveragents/plan/status", "s1", true},
		{"_cleveragents/plan/status", "", false},
		// A2A methods act on the key's tasks, which belong to no session:
		// naming the token's own session must not open them (issue 20).
		{"ListTasks", "", false},
		{"ListTasks", "s1", false},
		{"GetTask", "s1", false},
		{"SendMessage", "s1", false},
		{"tasks/cancel", "s1", false},
		{"CreateTaskPushNotificationConfig", "s1", false},
		{"_cleveragents/task/verify", "s1", false},
		{auth.MCPPseudoMethod, "", false},
		{auth.MetricsPseudoMethod, "s1", false},
		{"a/method/added/later", "s1", false},
	} {
		err := p.AllowMethod(tt.method, tt.session)
		if (err == nil) != tt.ok {
			t.Errorf("%s on %q: %v, want ok=%v", tt.method, tt.session, err, tt.ok)
		}
		if err != nil {
			wantFault(t, err, fault.Forbidden, fault.ReasonScopeDenied)
		}
	}
	if !p.Owns("key:ci") || p.Owns("key:other") || p.Owns("") {
		t.Error("a token must own exactly what its key owns")
	}
	if !p.OwnsSession("s1")("key:ci") || p.OwnsSession("s2")("key:ci") || p.OwnsSession("s1")("key:other") {
		t.Error("a token must own its own session only")
	}
	wantFault(t, p.AllowKeyWide("A2A tasks"), fault.Forbidden, fault.ReasonScopeDenied)
	key, _ := ks.Principal("ci")
	if err := key.AllowKeyWide("A2A tasks"); err != nil || !key.OwnsSession("s2")("key:ci") {
		t.Errorf("the key itself: AllowKeyWide = %v, OwnsSession(s2) = %v", err, key.OwnsSession("s2")("key:ci"))
	}
}

func TestOwnership(t *testing.T) {
	t.Parallel()
	ks := mustKeys(t, auth.KeySpec{ID: "a", SHA256: auth.Digest("ka"), Scopes: []string{"*"}},
		auth.KeySpec{ID: "b", SHA256: auth.Digest("kb"), Scopes: []string{"*"}})
	a, _ := ks.Principal("a")
	b, _ := ks.Principal("b")
	stdio, loop := auth.Local("stdio"), auth.Local("loopback")
	got := map[string]bool{
		"a owns a":             a.Owns(a.Owner()),
		"a owns b":             a.Owns(b.Owner()),
		"a owns legacy":        a.Owns(""),
		"stdio owns loopback":  stdio.Owns(loop.Owner()),
		"stdio owns legacy":    stdio.Owns(""),
		"nobody owns anything": auth.Principal{}.Owns(""),
	}
	want := map[string]bool{"a owns a": true, "a owns b": false, "a owns legacy": false,
		"stdio owns loopback": false, "stdio owns legacy": true, "nobody owns anything": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ownership (-want +got):\n%s", diff)
	}
	for _, owner := range []string{a.Owner(), stdio.Owner()} {
		if p, ok := ks.PrincipalOf(owner); !ok || p.Owner() != owner {
			t.Errorf("PrincipalOf(%q) = %v, %v", owner, p, ok)
		}
	}
	if _, ok := ks.PrincipalOf("key:gone"); ok {
		t.Error("PrincipalOf resolved a key that is not configured")
	}
	ctx := auth.With(context.Background(), a)
	if auth.From(ctx).Owner() != a.Owner() || auth.From(context.Background()).Kind() != auth.KindNone {
		t.Error("With/From do not round-trip")
	}
}

func TestGuard(t *testing.T) {
	t.Parallel()
	limits := auth.Limits{Rate: auth.Rate{N: 3, Period: time.Hour}, SessionRate: auth.Rate{N: 1, Period: time.Hour}, MaxConcurrentCalls: 2}
	ks, err := auth.NewKeySet([]auth.KeySpec{{ID: "k", SHA256: auth.Digest("k"), Scopes: []string{"*"}}}, limits)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ks.Principal("k")
	g := auth.NewGuard(nil, 1024)
	r1, err := g.Admit(p)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := g.Admit(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Admit(p) // two calls are running: refused before a rate token is taken
	wantFault(t, err, fault.ResourceExhausted, fault.ReasonRateLimited)
	r1()
	r1() // idempotent
	r3, err := g.Admit(p)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	r2()
	r3()
	_, err = g.Admit(p) // the hourly bucket of 3 is empty now
	wantFault(t, err, fault.ResourceExhausted, fault.ReasonRateLimited)
	if d := auth.RetryAfter(err); d <= 0 || d > time.Hour {
		t.Errorf("RetryAfter = %v, want within the hour", d)
	}
	if err := g.AdmitSession(p); err != nil {
		t.Fatal(err)
	}
	wantFault(t, g.AdmitSession(p), fault.ResourceExhausted, fault.ReasonRateLimited)
	for range 100 {
		rel, err := g.Admit(auth.Local("stdio"))
		if err != nil {
			t.Fatal("local principals are not limited:", err)
		}
		rel()
	}
}

// testLimits are per-key limits for tests (the configuration's defaults
// live in host/config, which imports this package).
func testLimits(t *testing.T) auth.Limits {
	t.Helper()
	rate, err := auth.ParseRate("100/s")
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := auth.ParseRate("60/m")
	if err != nil {
		t.Fatal(err)
	}
	return auth.Limits{Rate: rate, SessionRate: sessions, MaxOpenSessions: 16, MaxConcurrentCalls: 16, MaxContextBytes: 64 << 20}
}
