package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/skillhost/skillhost/host/config"
)

// readmeCardParser is the CardParser the docs give a2a-go v2.3.1 users
// (docs/getting-started/agent-client.md, "With an API key"):
// a2a-go reads requirement scopes as bare arrays where the v1.0 schema (and
// this host's card) has {"list": […]}, so it drops securityRequirements and
// a2a-go falls back to the v0.3 "security" member.
func readmeCardParser(body []byte) (*a2av1.AgentCard, error) {
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

// An official a2a-go v2 client reads the card's security schemes and calls
// the host with an API key through its AuthInterceptor; without the key it
// is refused; with a key out of scope it is forbidden.
func TestA2AClientWithAPIKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	echoer, other := newKey(t, "echoer", "skill:echo"), newKey(t, "other", "skill:strict-echo")
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Auth.Keys = []config.AuthKey{echoer.Entry, other.Entry} })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// The default parser of a2a-go v2.3.1 refuses the schema's form (if this
	// starts to pass, the docs' note on a2a-go is out of date).
	if _, err := (&agentcard.Resolver{Client: httpClient, CardParser: agentcard.DefaultCardParser}).Resolve(ctx, th.URL); err == nil {
		t.Error("a2a-go's default card parser now reads securityRequirements: drop the workaround in docs/getting-started/agent-client.md")
	}
	card, err := (&agentcard.Resolver{Client: httpClient, CardParser: readmeCardParser}).Resolve(ctx, th.URL)
	if err != nil {
		t.Fatalf("resolve the card: %v", err)
	}
	if _, ok := card.SecuritySchemes["apiKey"].(a2av1.APIKeySecurityScheme); !ok || len(card.SecurityRequirements) == 0 {
		t.Fatalf("card security: schemes %v, requirements %v", card.SecuritySchemes, card.SecurityRequirements)
	}
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("echoer", "apiKey", a2aclient.AuthCredential(echoer.Secret))
	creds.Set("other", "bearer", a2aclient.AuthCredential(other.Secret))
	cl, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		t.Fatal(err)
	}
	msg := func() *a2av1.SendMessageRequest {
		m := a2av1.NewMessage(a2av1.MessageRoleUser, a2av1.NewDataPart(map[string]any{"text": "hi"}))
		m.Metadata = map[string]any{"skillId": "echo"}
		return &a2av1.SendMessageRequest{Message: m}
	}

	res, err := cl.SendMessage(a2aclient.AttachSessionID(ctx, "echoer"), msg())
	if err != nil {
		t.Fatalf("with the key: %v", err)
	}
	task, ok := res.(*a2av1.Task)
	if !ok || task.Status.State != a2av1.TaskStateCompleted {
		t.Fatalf("with the key: %+v", res)
	}
	if _, err := cl.SendMessage(ctx, msg()); err == nil {
		t.Error("without a key: accepted")
	}
	if _, err := cl.SendMessage(a2aclient.AttachSessionID(ctx, "other"), msg()); err == nil {
		t.Error("a key without the skill in scope: accepted")
	}
	if _, err := cl.GetTask(a2aclient.AttachSessionID(ctx, "other"), &a2av1.GetTaskRequest{ID: task.ID}); err == nil {
		t.Error("another key read the task")
	}
	if got, err := cl.GetTask(a2aclient.AttachSessionID(ctx, "echoer"), &a2av1.GetTaskRequest{ID: task.ID}); err != nil || got.ID != task.ID {
		t.Errorf("the owner's GetTask: %v, %v", got, err)
	}
}

// A request the HTTP layer refuses on a route of the HTTP+JSON binding (no
// key, a wrong key, a body not sent as JSON) is answered like the binding's
// own errors, with a google.rpc.Status, so the binding's clients decode it:
// a2a-go v2's REST client sees ErrUnauthenticated (before, the body was a
// JSON-RPC error object and the client saw an internal error).
func TestRESTRefusalsAreStatusBodies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", toolsManifest)
	echoer := newKey(t, "echoer", "skill:echo")
	th, _ := mustHostWith(t, dir, func(c *config.Config) { c.Auth.Keys = []config.AuthKey{echoer.Entry} })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	card, err := (&agentcard.Resolver{Client: httpClient, CardParser: readmeCardParser}).Resolve(ctx, th.URL)
	if err != nil {
		t.Fatalf("resolve the card: %v", err)
	}
	creds := a2aclient.NewInMemoryCredentialsStore()
	creds.Set("wrong", "apiKey", a2aclient.AuthCredential("sk_wrong"))
	cl, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithRESTTransport(httpClient),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2av1.TransportProtocol{a2av1.TransportProtocolHTTPJSON}}),
		a2aclient.WithCallInterceptors(&a2aclient.AuthInterceptor{Service: creds}))
	if err != nil {
		t.Fatal(err)
	}
	msg := message("echo", map[string]any{"text": "hi"})
	if _, err := cl.SendMessage(ctx, msg); !errors.Is(err, a2av1.ErrUnauthenticated) {
		t.Errorf("REST without a key: %v, want ErrUnauthenticated", err)
	}
	if _, err := cl.SendMessage(a2aclient.AttachSessionID(ctx, "wrong"), msg); !errors.Is(err, a2av1.ErrUnauthenticated) {
		t.Errorf("REST with a wrong key: %v, want ErrUnauthenticated", err)
	}

	tests := []struct {
		name, key, contentType string
		status                 int
		grpc, a2aReason        string
		reason                 string
	}{
		{"no key", "", "application/json", 401, "UNAUTHENTICATED", "UNAUTHENTICATED", "unauthenticated"},
		{"wrong key", "sk_wrong", "application/json", 401, "UNAUTHENTICATED", "UNAUTHENTICATED", "invalid_credentials"},
		{"not JSON", echoer.Secret, "text/plain", 415, "INVALID_ARGUMENT", "INVALID_REQUEST", "unsupported_media_type"},
	}
	for _, tt := range tests {
		headers := map[string]string{"Content-Type": tt.contentType, "X-Request-ID": "rest-refusal"}
		if tt.key != "" {
			headers["X-API-Key"] = tt.key
		}
		r, err := send(ctx, httpClient, th.URL+"/a2a/message:send", headers, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct {
				Code    int    `json:"code"`
				Status  string `json:"status"`
				Details []struct {
					Type     string            `json:"@type"`
					Reason   string            `json:"reason"`
					Domain   string            `json:"domain"`
					Metadata map[string]string `json:"metadata"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Error.Details) != 1 {
			t.Fatalf("%s: HTTP %d %s: not a google.rpc.Status (%v)", tt.name, r.Status, r.Body, err)
		}
		d := body.Error.Details[0]
		if r.Status != tt.status || body.Error.Code != tt.status || body.Error.Status != tt.grpc || d.Reason != tt.a2aReason ||
			d.Domain != "a2a-protocol.org" || d.Metadata["reason"] != tt.reason || d.Metadata["request_id"] != "rest-refusal" {
			t.Errorf("%s: HTTP %d %s, want %d %s %s/%s", tt.name, r.Status, r.Body, tt.status, tt.grpc, tt.a2aReason, tt.reason)
		}
		if tt.status == 401 && r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate", tt.name)
		}
	}
}
