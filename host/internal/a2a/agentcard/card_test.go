package agentcard_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/skillhost/skillhost/host/fault"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/a2a/v03"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/sandbox"
)

const schemaPath = "schema/a2a-v1.0.schema.json" // copy of shared/spec/a2a-v1.0.schema.json (generated from the official a2a.proto)

func mustCardSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(mustRead(t, schemaPath)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("file:///a2a.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("file:///a2a.json#/definitions/Agent%20Card")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// v03Keys are the union card's v0.3-only members, stripped before validating
// against the v1.0 schema (which forbids unknown keys).
var v03Keys = []string{"url", "preferredTransport", "protocolVersion", "additionalInterfaces", "security", "supportsAuthenticatedExtendedCard"}

// mustValidCard checks a served (union) card: the v1.0 schema after
// stripping the v0.3 keys, the REQUIRED fields of the digest, and the v0.3
// fields a v0.3 client needs. It returns the card parsed by a2a-go's v0.3
// parser, which reads either shape.
func mustValidCard(t *testing.T, sch *jsonschema.Schema, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("card is not JSON: %v", err)
	}
	if m["url"] == "" || m["preferredTransport"] != "JSONRPC" || m["protocolVersion"] != "0.3" {
		t.Errorf("v0.3 fields missing: url=%v preferredTransport=%v protocolVersion=%v", m["url"], m["preferredTransport"], m["protocolVersion"])
	}
	v1 := map[string]any{}
	for k, v := range m {
		if !slices.Contains(v03Keys, k) {
			v1[k] = v
		}
	}
	for _, s := range v1["skills"].([]any) {
		delete(s.(map[string]any), "security")
	}
	if schemes, ok := v1["securitySchemes"].(map[string]any); ok {
		for _, sc := range schemes {
			for _, k := range []string{"type", "in", "name", "scheme", "bearerFormat", "description", "apiKey", "http"} {
				delete(sc.(map[string]any), k)
			}
		}
	}
	if err := sch.Validate(v1); err != nil {
		t.Errorf("card fails the v1.0 schema: %v\n%s", err, body)
	}
	for _, k := range []string{"name", "description", "version"} {
		if s, _ := v1[k].(string); s == "" {
			t.Errorf("required %s is empty", k)
		}
	}
	for _, k := range []string{"supportedInterfaces", "defaultInputModes", "defaultOutputModes"} {
		if l, _ := v1[k].([]any); len(l) == 0 {
			t.Errorf("required %s is empty", k)
		}
	}
	if _, ok := v1["capabilities"].(map[string]any); !ok {
		t.Error("capabilities missing")
	}
	for _, s := range v1["skills"].([]any) {
		sk := s.(map[string]any)
		for _, k := range []string{"id", "name", "description"} {
			if v, _ := sk[k].(string); v == "" {
				t.Errorf("skill %v: required %s is empty", sk["id"], k)
			}
		}
		if _, ok := sk["tags"].([]any); !ok {
			t.Errorf("skill %v: tags missing", sk["id"])
		}
	}
	return m
}

func testPlugin(name, version string, skills ...string) *plugin.Plugin {
	m := &plugin.Manifest{Name: name, Version: version, Description: name + " plugin"}
	for _, s := range skills {
		m.Skills = append(m.Skills, &plugin.Skill{ID: s, Name: s, Description: "does " + s, Tags: []string{"test"},
			Examples: []plugin.Example{{Input: json.RawMessage(`{"text":"hi"}`)}}})
	}
	return &plugin.Plugin{Manifest: m, Limits: sandbox.Limits{Timeout: 2 * time.Second, MemoryBytes: 64 << 20, OutputBytes: 1 << 20, Concurrency: 4}}
}

func TestCardIsValidAndTruthful(t *testing.T) {
	t.Parallel()
	sch := mustCardSchema(t)
	snap := &plugin.Snapshot{Revision: 1, Plugins: []*plugin.Plugin{testPlugin("text-tools", "1.2.0", "uppercase", "reverse"), testPlugin("math", "0.1.0", "add")}}
	tests := []struct {
		name       string
		cfg        agentcard.Config
		wantIfaces []string
		wantAuth   []string
	}{
		{"http only", agentcard.Config{BaseURL: "http://127.0.0.1:8080/", Version: "1.4.0"},
			[]string{"JSONRPC 1.0 http://127.0.0.1:8080/rpc", "HTTP+JSON 1.0 http://127.0.0.1:8080/a2a", "JSONRPC 0.3 http://127.0.0.1:8080/rpc"}, nil},
		{"hybrid with auth", agentcard.Config{BaseURL: "https://agents.example", Version: "1.4.0", Stdio: true, APIKeyAuth: true, BearerAuth: true},
			[]string{"JSONRPC 1.0 https://agents.example/rpc", "HTTP+JSON 1.0 https://agents.example/a2a", "JSONRPC 0.3 https://agents.example/rpc", agentcard.BindingStdio + " 1.0 stdio:"},
			[]string{"apiKey", "bearer"}},
		{"with gRPC", agentcard.Config{BaseURL: "https://agents.example", Version: "1.4.0", GRPC: "agents.example:9443", APIKeyAuth: true, BearerAuth: true},
			[]string{"JSONRPC 1.0 https://agents.example/rpc", "HTTP+JSON 1.0 https://agents.example/a2a", "GRPC 1.0 agents.example:9443", "JSONRPC 0.3 https://agents.example/rpc"},
			[]string{"apiKey", "bearer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cards := agentcard.NewService(tt.cfg, func() *plugin.Snapshot { return snap }, agentcard.Options{})
			body, etag, err := cards.Card(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if etag == "" {
				t.Error("no ETag")
			}
			m := mustValidCard(t, sch, body)
			if _, err := pbconv.ToProtoAgentCard(agentcard.Build(tt.cfg, snap)); err != nil {
				t.Errorf("the card has no protobuf form (the gRPC binding's GetExtendedAgentCard): %v", err)
			}
			card, err := parseWithA2AGo(body)
			if err != nil {
				t.Fatal(err)
			}
			var ifaces []string
			for _, i := range card.SupportedInterfaces {
				ifaces = append(ifaces, string(i.ProtocolBinding)+" "+string(i.ProtocolVersion)+" "+i.URL)
			}
			if diff := cmp.Diff(tt.wantIfaces, ifaces); diff != "" {
				t.Errorf("interfaces (-want +got):\n%s", diff)
			}
			if card.Version != "1.4.0" || card.Provider == nil || card.Provider.Org != "skillhost" {
				t.Errorf("version/provider = %q/%+v, want the host's version 1.4.0", card.Version, card.Provider)
			}
			var ids []string
			for _, s := range card.Skills {
				ids = append(ids, s.ID)
				if !slices.Contains(s.InputModes, "application/json") || !slices.Contains(s.InputModes, "text/plain") || len(s.Examples) != 1 {
					t.Errorf("skill %s: modes %v examples %v", s.ID, s.InputModes, s.Examples)
				}
			}
			if diff := cmp.Diff([]string{"add", "uppercase", "reverse"}, ids); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
			if !card.Capabilities.Streaming || card.Capabilities.PushNotifications {
				t.Errorf("capabilities = %+v", card.Capabilities)
			}
			exts := map[string]a2av1.AgentExtension{}
			for _, e := range card.Capabilities.Extensions {
				exts[e.URI] = e
			}
			if methods, _ := exts[agentcard.ExtCleverAgents].Params["methods"].([]any); len(methods) != len(agentcard.CleverAgentsMethods) {
				t.Errorf("cleveragents methods = %v", methods)
			}
			lim, _ := exts[agentcard.ExtLimits].Params["skills"].(map[string]any)
			want := map[string]any{"plugin": "math", "timeout_ms": 2000.0, "memory_bytes": float64(64 << 20), "output_bytes": float64(1 << 20), "concurrency": 4.0}
			if diff := cmp.Diff(want, lim["add"]); diff != "" {
				t.Errorf("limits of add (-want +got):\n%s", diff)
			}
			var schemes []string
			for name := range card.SecuritySchemes {
				schemes = append(schemes, string(name))
			}
			slices.Sort(schemes)
			if diff := cmp.Diff(tt.wantAuth, schemes); diff != "" {
				t.Errorf("security schemes (-want +got):\n%s", diff)
			}
			if tt.wantAuth != nil && m["security"] == nil {
				t.Error("v0.3 security requirements missing")
			}
			if tt.wantAuth != nil {
				// The v1.0 schema's form: scopes as a StringList, {} when empty.
				want := []any{map[string]any{"schemes": map[string]any{"apiKey": map[string]any{}}},
					map[string]any{"schemes": map[string]any{"bearer": map[string]any{}}}}
				got, _ := m["securityRequirements"].([]any)
				slices.SortFunc(got, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("securityRequirements (-want +got):\n%s", diff)
				}
				if len(card.SecurityRequirements) != 2 {
					t.Errorf("a2a-go reads %d requirements from the v0.3 member, want 2", len(card.SecurityRequirements))
				}
			}
		})
	}
}

func TestCardChangesWithPlugins(t *testing.T) {
	t.Parallel()
	sch := mustCardSchema(t)
	snap := &plugin.Snapshot{Revision: 1, Plugins: []*plugin.Plugin{testPlugin("text-tools", "1.0.0", "uppercase")}}
	cards := agentcard.NewService(agentcard.Config{}, func() *plugin.Snapshot { return snap }, agentcard.Options{})
	ctx := context.Background()
	b1, e1, _ := cards.Card(ctx)
	b1again, e1again, _ := cards.Card(ctx)
	if e1 != e1again || !bytes.Equal(b1, b1again) {
		t.Error("an unchanged plugin set changed the card")
	}
	snap = &plugin.Snapshot{Revision: 2, Plugins: []*plugin.Plugin{testPlugin("text-tools", "1.0.0", "uppercase"), testPlugin("math", "1.0.0", "add")}}
	cards.Update(snap)
	b2, e2, _ := cards.Card(ctx)
	if e2 == e1 || !bytes.Contains(b2, []byte(`"add"`)) {
		t.Errorf("card did not change with the plugin set (etag %s -> %s)", e1, e2)
	}
	mustValidCard(t, sch, b2)
	mustNoNulls(t, b2)

	agent, _, err := cards.AgentCard(ctx, "math")
	if err != nil {
		t.Fatal(err)
	}
	m := mustValidCard(t, sch, agent)
	mustNoNulls(t, agent)
	if m["name"] != "math" || len(m["skills"].([]any)) != 1 {
		t.Errorf("agent card name %v skills %v", m["name"], m["skills"])
	}
	var ifaces []string
	for _, i := range m["supportedInterfaces"].([]any) {
		i := i.(map[string]any)
		ifaces = append(ifaces, fmt.Sprintf("%v %v %v %v", i["protocolBinding"], i["protocolVersion"], i["url"], i["tenant"]))
	}
	wantIfaces := []string{"JSONRPC 1.0 http://127.0.0.1:8080/agents/math/rpc math", "HTTP+JSON 1.0 http://127.0.0.1:8080/a2a math",
		"JSONRPC 0.3 http://127.0.0.1:8080/agents/math/rpc math"}
	if diff := cmp.Diff(wantIfaces, ifaces); diff != "" {
		t.Errorf("agent card interfaces (-want +got):\n%s", diff)
	}
	// The v0.3 url routes to this plugin only.
	if m["url"] != "http://127.0.0.1:8080/agents/math/rpc" || m["preferredTransport"] != "JSONRPC" {
		t.Errorf("agent card v0.3 url %v, preferredTransport %v", m["url"], m["preferredTransport"])
	}
	if _, _, err := cards.AgentCard(ctx, "nope"); !errors.Is(err, fault.ErrAgentNotFound) {
		t.Errorf("unknown agent: %v", err)
	}

	snap = &plugin.Snapshot{Revision: 3}
	b3, _, err := cards.Card(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var empty map[string]any
	_ = json.Unmarshal(b3, &empty)
	if s, ok := empty["skills"].([]any); !ok || len(s) != 0 {
		t.Errorf("empty plugin set: skills = %v, want []", empty["skills"])
	}
}

// The extended card lists only the skills the caller's key may run.
func TestExtendedCard(t *testing.T) {
	t.Parallel()
	snap := func() *plugin.Snapshot {
		return &plugin.Snapshot{Plugins: []*plugin.Plugin{testPlugin("text-tools", "1.0.0", "uppercase", "reverse"), testPlugin("math", "1.0.0", "add")}}
	}
	off := agentcard.NewService(agentcard.Config{}, snap, agentcard.Options{})
	if _, err := off.ExtendedCard(context.Background(), ""); !errors.Is(err, &fault.Error{Kind: fault.ExtendedCardNotConfigured}) {
		t.Errorf("unconfigured extended card: %v, want -32007", err)
	}
	on := agentcard.NewService(agentcard.Config{}, snap, agentcard.Options{ExtendedCard: true})
	tests := []struct {
		name   string
		scopes []string
		tenant string
		want   []string
	}{
		{"every scope", []string{"*"}, "", []string{"add", "uppercase", "reverse"}},
		{"one skill", []string{"skill:upper*"}, "", []string{"uppercase"}},
		{"one agent", []string{"agent:math"}, "", []string{"add"}},
		{"no skill scope", []string{"method:GetTask"}, "", []string{}},
		{"tenant", []string{"*"}, "math", []string{"add"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := auth.With(context.Background(), mustPrincipal(t, tt.scopes...))
			card, err := on.ExtendedCard(ctx, tt.tenant)
			if err != nil || !card.Capabilities.ExtendedAgentCard {
				t.Fatalf("extended card = %+v, %v", card, err)
			}
			v1, err := json.Marshal(card)
			if err != nil {
				t.Fatal(err)
			}
			v03, err := json.Marshal(v03.Card(card))
			if err != nil {
				t.Fatal(err)
			}
			mustNoNulls(t, v1)
			mustNoNulls(t, v03)
			got := []string{}
			for _, s := range card.Skills {
				got = append(got, s.ID)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("skills (-want +got):\n%s", diff)
			}
		})
	}
}

// mustPrincipal is the principal of a fresh API key holding scopes.
func mustPrincipal(t *testing.T, scopes ...string) auth.Principal {
	t.Helper()
	const secret = "sk_test_principal"
	sum := sha256.Sum256([]byte(secret))
	keys, err := auth.NewKeySet([]auth.KeySpec{{ID: "k", SHA256: hex.EncodeToString(sum[:]), Scopes: scopes}}, auth.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := auth.NewAuthenticator(keys, nil).Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// parseWithA2AGo parses a served card as an a2a-go v2.3.1 client configured
// as the README says: a2a-go reads requirement scopes as a bare array where
// the v1.0 schema has {"list": […]}, so the client drops
// securityRequirements and a2a-go falls back to the v0.3 "security" member.
func parseWithA2AGo(body []byte) (*a2av1.AgentCard, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	delete(m, "securityRequirements")
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return a2av0.NewAgentCardParser()(b)
}

// mustNoNulls fails when a card has a null member anywhere: clients of
// typed languages choke on them, and the schema has no nulls.
func mustNoNulls(t *testing.T, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case nil:
			t.Errorf("card member %s is null", path)
		case map[string]any:
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("$", v)
}

// TestCardSkillTags: tags are required; a skill whose manifest has none
// is tagged with its plugin's name, so the card also has a protobuf form
// (the gRPC binding refuses skills without tags).
func TestCardSkillTags(t *testing.T) {
	t.Parallel()
	p := testPlugin("text-tools", "1.0.0", "upper")
	p.Manifest.Skills[0].Tags = nil
	if diff := cmp.Diff([]string{"text-tools"}, agentcard.Skill(p, p.Manifest.Skills[0]).Tags); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	if _, err := pbconv.ToProtoAgentCard(agentcard.Build(agentcard.Config{}, &plugin.Snapshot{Plugins: []*plugin.Plugin{p}})); err != nil {
		t.Errorf("protobuf card: %v", err)
	}
}
