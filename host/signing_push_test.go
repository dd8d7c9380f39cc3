package host_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host"
	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// On a signing host, over both bindings: a task's pushed status updates
// carry the signed link of their transition (verifiable against the JWKS
// the host serves, and part of the task's stored chain), and the task read
// back over the binding verifies as a whole.
func TestSignedPushAndBindings(t *testing.T) {
	t.Parallel()
	key := mustKeygen(t, t.TempDir(), "host.key", "ed25519")
	dir := t.TempDir()
	mustPlugin(t, dir, "tools", bindingsManifest)
	th, _ := mustHostWith(t, dir, func(c *config.Config) {
		c.Net.AllowPrivate = []string{"127.0.0.0/8"}
		c.Identity.KeyFile = []string{key.Private}
	})
	_, jwksBody := th.get(t, identity.JWKSPath)
	jwks, err := identity.ParseJWKS(jwksBody)
	if err != nil {
		t.Fatal(err)
	}
	for _, binding := range []a2av1.TransportProtocol{a2av1.TransportProtocolJSONRPC, a2av1.TransportProtocolHTTPJSON} {
		t.Run(string(binding), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			url, got := mustReceiver(t)
			cl := mustClient(ctx, t, th.URL, binding)
			req := message("echo", map[string]any{"text": "signed"})
			req.Config = &a2av1.SendMessageConfig{PushConfig: &a2av1.PushConfig{URL: url, Token: "tok"}}
			res, err := cl.SendMessage(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			id := res.(*a2av1.Task).ID
			p := waitState(t, got, id, a2av1.TaskStateCompleted)
			su := p.event.(*a2av1.TaskStatusUpdateEvent)
			raw, err := json.Marshal(su.Metadata[provenance.ExtURI])
			if err != nil || su.Metadata[provenance.ExtURI] == nil {
				t.Fatalf("pushed status update without provenance: %v", su.Metadata)
			}
			rep := provenance.VerifyLinks(raw, jwks)
			if !rep.Valid {
				t.Fatalf("pushed links do not verify: %v", rep.Err())
			}
			var pushed provenance.Chain
			if err := json.Unmarshal(raw, &pushed); err != nil || len(pushed.Links) != 1 || pushed.Links[0].To != string(a2av1.TaskStateCompleted) {
				t.Fatalf("pushed fragment %s: %v", raw, err)
			}

			task, err := cl.GetTask(ctx, &a2av1.GetTaskRequest{ID: id})
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(task)
			if err != nil {
				t.Fatal(err)
			}
			v, err := host.VerifyTask(body, host.VerifyKeys{JWKS: jwksBody})
			if err != nil || !v.Valid {
				t.Fatalf("the task read over %s does not verify: %v %s", binding, err, v.Message())
			}
			if v.Head != rep.Head {
				t.Errorf("the chain ends in %s, the pushed link is %s", v.Head, rep.Head)
			}
		})
	}
}
