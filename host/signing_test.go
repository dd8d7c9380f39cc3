package host_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/devkit"
	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/identity"
)

func mustKeygen(t *testing.T, dir, name, alg string) devkit.Key {
	t.Helper()
	k, err := devkit.Keygen(filepath.Join(dir, name), alg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func signedManifest(name, skill string) string {
	return fmt.Sprintf("name: %s\nversion: 1.0.0\ndescription: d\nwasm: hostile.wasm\nskills:\n  - {id: %s, description: echoes, function: echo}\n", name, skill)
}

// A host with a hybrid identity and trust.require_signatures: the signed
// plugin is served and its card names its publisher, the unsigned one is
// refused; the host card and the per-agent card verify against the JWKS the
// host serves.
func TestHostSigning(t *testing.T) {
	t.Parallel()
	keys := t.TempDir()
	ed, ml := mustKeygen(t, keys, "host.key", "ed25519"), mustKeygen(t, keys, "host-pq.key", "ml-dsa-65")
	alice := mustKeygen(t, keys, "alice.key", "ed25519")
	plugins := t.TempDir()
	mustPlugin(t, plugins, "signed", signedManifest("signed", "signed-echo"))
	mustPlugin(t, plugins, "plain", signedManifest("plain", "plain-echo"))
	if _, err := devkit.Sign(filepath.Join(plugins, "signed"), []string{alice.Private}); err != nil {
		t.Fatal(err)
	}
	th, _ := mustHostWith(t, plugins, func(c *config.Config) {
		c.Identity.KeyFile = []string{ed.Private, ml.Private}
		c.Trust = config.Trust{RequireSignatures: true, Publishers: []string{alice.Public}}
	})

	resp, jwksBody := th.get(t, identity.JWKSPath)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/jwk-set+json" {
		t.Fatalf("GET %s: %d %s", identity.JWKSPath, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	jwks, err := identity.ParseJWKS(jwksBody)
	if err != nil || jwks.Len() != 2 {
		t.Fatalf("JWKS %s: %v", jwksBody, err)
	}
	for _, path := range []string{agentcard.WellKnownPath, agentcard.AgentCardPath("signed")} {
		_, card := th.get(t, path)
		k, err := agentcard.Verify(card, jwks)
		if err != nil {
			t.Fatalf("%s does not verify against the served JWKS: %v", path, err)
		}
		if k.KeyID() != ed.KeyID && k.KeyID() != ml.KeyID {
			t.Errorf("%s verified by an unexpected key %s", path, k.KeyID())
		}
		if !strings.Contains(string(card), th.URL+identity.JWKSPath) {
			t.Errorf("%s does not name the JWKS (jku)", path)
		}
	}
	_, agent := th.get(t, agentcard.AgentCardPath("signed"))
	if !strings.Contains(string(agent), `"publisher": "alice"`) || !strings.Contains(string(agent), alice.KeyID) {
		t.Errorf("the signed plugin's card does not name its publisher:\n%s", agent)
	}
	if r, _ := th.get(t, agentcard.AgentCardPath("plain")); r.StatusCode != 404 {
		t.Errorf("the unsigned plugin is served (card status %d)", r.StatusCode)
	}
	_, doc := th.get(t, "/admin/plugins")
	if !strings.Contains(string(doc), `"signer":"alice (`+alice.KeyID+`)"`) {
		t.Errorf("/admin/plugins does not name the signer:\n%s", doc)
	}
}

// Without identity.key_file no JWKS is served and the card is unsigned.
func TestHostWithoutIdentity(t *testing.T) {
	t.Parallel()
	plugins := t.TempDir()
	mustPlugin(t, plugins, "plain", signedManifest("plain", "plain-echo"))
	th := mustHost(t, plugins)
	if r, _ := th.get(t, identity.JWKSPath); r.StatusCode != 404 {
		t.Errorf("GET %s without keys: %d, want 404", identity.JWKSPath, r.StatusCode)
	}
	if _, card := th.get(t, agentcard.WellKnownPath); strings.Contains(string(card), `"signatures"`) {
		t.Error("an unsigned host serves card signatures")
	}
}
