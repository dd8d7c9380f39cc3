package agentcard_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/a2a/agentcard"
	"github.com/skillhost/skillhost/host/internal/auth"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

const testJKU = "https://agents.example/.well-known/jwks.json"

func mustHybridSigner(t *testing.T) *identity.Signer {
	t.Helper()
	var keys []*identity.PrivateKey
	for _, alg := range []identity.Alg{identity.Ed25519, identity.MLDSA65} {
		k, err := identity.Generate(alg)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	s, err := identity.NewSigner(keys, testJKU)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func signedCards(t *testing.T, signer *identity.Signer, cfg agentcard.Config) (host, agent []byte) {
	t.Helper()
	signed := testPlugin("math", "0.1.0", "add")
	signed.Signing = &plugin.Signing{Statement: plugin.Statement{WasmSHA256: strings.Repeat("ab", 32)},
		Signers: []plugin.Signer{{KeyID: "k1", Alg: "EdDSA", Publisher: "alice", Trusted: true}}}
	snap := &plugin.Snapshot{Revision: 1, Plugins: []*plugin.Plugin{testPlugin("text-tools", "1.2.0", "uppercase", "reverse"), signed}}
	cards := agentcard.NewService(cfg, func() *plugin.Snapshot { return snap }, agentcard.Options{Signer: signer, ExtendedCard: true})
	ctx := context.Background()
	host, _, err := cards.Card(ctx)
	if err != nil {
		t.Fatal(err)
	}
	agent, _, err = cards.AgentCard(ctx, "math")
	if err != nil {
		t.Fatal(err)
	}
	return host, agent
}

// The served cards carry one JWS per host key over the canonical card; an
// independent JOSE library (go-jose, with its own Ed25519 key type read
// from the JWKS) verifies the Ed25519 one, and a one-byte change of the
// card makes both it and VerifyCard fail.
func TestSignedCardVerifiesIndependently(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	host, agent := signedCards(t, signer, agentcard.Config{BaseURL: "https://agents.example", Stdio: true, APIKeyAuth: true, BearerAuth: true})
	sch := mustCardSchema(t)
	jwks, err := json.Marshal(signer.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	var raw struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(jwks, &raw); err != nil {
		t.Fatal(err)
	}
	var edKey jose.JSONWebKey
	if err := edKey.UnmarshalJSON(raw.Keys[0]); err != nil { // the Ed25519 key; go-jose on Go 1.26 cannot read AKP
		t.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{edKey}}

	for name, body := range map[string][]byte{"host": host, "agent": agent} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mustValidCard(t, sch, body)
			var card struct {
				Signatures []identity.Signature `json:"signatures"`
			}
			if err := json.Unmarshal(body, &card); err != nil || len(card.Signatures) != 2 {
				t.Fatalf("signatures %+v (%v): want one per key", card.Signatures, err)
			}
			hdr := map[string]any{}
			b, _ := base64.RawURLEncoding.DecodeString(card.Signatures[0].Protected)
			_ = json.Unmarshal(b, &hdr)
			want := map[string]any{"alg": "EdDSA", "kid": signer.Keys()[0].KeyID(), "typ": "JOSE", "jku": testJKU}
			if diff := cmp.Diff(want, hdr); diff != "" {
				t.Errorf("protected header (-want +got):\n%s", diff)
			}
			payload, err := agentcard.Canonical(body)
			if err != nil {
				t.Fatal(err)
			}
			if err := goJoseVerify(card.Signatures[0], payload, set); err != nil {
				t.Fatalf("go-jose rejects the served card: %v", err)
			}
			if _, err := agentcard.Verify(body, signer.KeySet()); err != nil {
				t.Fatal(err)
			}
			// One byte changed in a signed member.
			i := strings.Index(string(body), `"description": "`) + len(`"description": "`)
			changed := append([]byte(nil), body...)
			changed[i] ^= 0x01
			changedPayload, err := agentcard.Canonical(changed)
			if err != nil {
				t.Fatal(err)
			}
			if err := goJoseVerify(card.Signatures[0], changedPayload, set); err == nil {
				t.Error("go-jose verified a card with a changed byte")
			}
			if _, err := agentcard.Verify(changed, signer.KeySet()); err == nil {
				t.Error("VerifyCard verified a card with a changed byte")
			}
		})
	}
	if !strings.Contains(string(agent), agentcard.ExtPluginSignatures) || !strings.Contains(string(agent), `"publisher": "alice"`) {
		t.Errorf("the agent card does not say who signed the plugin:\n%s", agent)
	}
	if !strings.Contains(string(host), agentcard.ExtIdentity) || !strings.Contains(string(host), testJKU) {
		t.Errorf("the host card does not publish its keys:\n%s", host)
	}
}

func goJoseVerify(sig identity.Signature, payload []byte, set jose.JSONWebKeySet) error {
	jws, err := jose.ParseDetached(sig.Compact(), payload, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		return err
	}
	keys := set.Key(jws.Signatures[0].Header.KeyID)
	if len(keys) != 1 {
		return os.ErrNotExist
	}
	return jws.DetachedVerify(payload, keys[0].Key.(ed25519.PublicKey))
}

// The canonical form is the same whichever shape a client reads: the
// served union card, the pure v1.0 JSON (GetExtendedAgentCard), with or
// without the signatures.
func TestCanonicalCardIgnoresShape(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	snap := &plugin.Snapshot{Revision: 1, Plugins: []*plugin.Plugin{testPlugin("math", "0.1.0", "add")}}
	cards := agentcard.NewService(agentcard.Config{APIKeyAuth: true}, func() *plugin.Snapshot { return snap },
		agentcard.Options{Signer: signer, ExtendedCard: true})
	ctx := context.Background()
	union, _, err := cards.Card(ctx)
	if err != nil {
		t.Fatal(err)
	}
	card, err := cards.HostCard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := agentcard.MarshalV1(card)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agentcard.Canonical(union)
	if err != nil {
		t.Fatal(err)
	}
	b, err := agentcard.Canonical(v1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(a), string(b)); diff != "" {
		t.Errorf("canonical union vs v1.0 JSON (-union +v1):\n%s", diff)
	}
	if _, err := agentcard.Verify(v1, signer.KeySet()); err != nil {
		t.Errorf("the v1.0 JSON of the card does not verify: %v", err)
	}
	if strings.Contains(string(a), `"signatures":`) || strings.Contains(string(a), `"preferredTransport":`) {
		t.Errorf("canonical form keeps signatures or v0.3 keys: %s", a)
	}
}

// Golden files: each testdata/cardcanon/*.json card and the canonical form
// @a2a-js/sdk 1.3.0's canonicalizeAgentCard computed for it (*.canonical,
// written by TestSignedCardWithJSSDK with SKILLHOST_UPDATE_GOLDEN=1).
func TestCanonicalCardMatchesJSSDKGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/cardcanon/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cards: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			got, err := agentcard.Canonical(mustRead(t, f))
			if err != nil {
				t.Fatal(err)
			}
			want := mustRead(t, strings.TrimSuffix(f, ".json")+".canonical")
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("canonical form vs @a2a-js/sdk (-sdk +ours):\n%s", diff)
			}
		})
	}
}

// A card is re-signed when it changes (hot reload).
func TestCardResignedOnChange(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	var cur atomic.Pointer[plugin.Snapshot]
	cur.Store(&plugin.Snapshot{Revision: 1, Plugins: []*plugin.Plugin{testPlugin("math", "0.1.0", "add")}})
	cards := agentcard.NewService(agentcard.Config{}, cur.Load, agentcard.Options{Signer: signer})
	ctx := context.Background()
	first, _, err := cards.Card(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur.Store(&plugin.Snapshot{Revision: 2, Plugins: []*plugin.Plugin{testPlugin("math", "0.2.0", "add", "sub")}})
	second, _, err := cards.Card(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if string(first) == string(second) {
		t.Fatal("card unchanged after the plugin set changed")
	}
	for _, body := range [][]byte{first, second} {
		if _, err := agentcard.Verify(body, signer.KeySet()); err != nil {
			t.Errorf("card does not verify: %v", err)
		}
	}
}

// The extended card, rendered for each caller (its skills filtered by the
// caller's scopes, or one tenant's), is signed too: its v1.0 JSON verifies,
// a changed byte does not, and the plugin signatures extension names only
// plugins the caller sees.
func TestExtendedCardSigned(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	signed := testPlugin("math", "0.1.0", "add")
	signed.Signing = &plugin.Signing{Statement: plugin.Statement{WasmSHA256: strings.Repeat("ab", 32)},
		Signers: []plugin.Signer{{KeyID: "k1", Alg: "EdDSA", Publisher: "alice", Trusted: true}}}
	snap := &plugin.Snapshot{Revision: 1, Plugins: []*plugin.Plugin{testPlugin("text-tools", "1.2.0", "uppercase"), signed}}
	cards := agentcard.NewService(agentcard.Config{APIKeyAuth: true}, func() *plugin.Snapshot { return snap },
		agentcard.Options{Signer: signer, ExtendedCard: true})
	tests := []struct {
		name, tenant string
		scopes       []string
		wantMath     bool // the signatures extension names math
	}{
		{"every scope", "", []string{"*"}, true},
		{"text-tools only", "", []string{"agent:text-tools"}, false},
		{"tenant math", "math", []string{"*"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := auth.With(context.Background(), mustPrincipal(t, tt.scopes...))
			card, err := cards.ExtendedCard(ctx, tt.tenant)
			if err != nil {
				t.Fatal(err)
			}
			body, err := agentcard.MarshalV1(card)
			if err != nil {
				t.Fatal(err)
			}
			if len(card.Signatures) != 2 {
				t.Fatalf("%d signatures, want one per key", len(card.Signatures))
			}
			if _, err := agentcard.Verify(body, signer.KeySet()); err != nil {
				t.Fatalf("the extended card does not verify: %v", err)
			}
			i := strings.Index(string(body), `"description":"`) + len(`"description":"`)
			changed := append([]byte(nil), body...)
			changed[i] ^= 0x01
			if _, err := agentcard.Verify(changed, signer.KeySet()); err == nil {
				t.Error("an extended card with a changed byte verifies")
			}
			if got := strings.Contains(string(body), `"publisher":"alice"`); got != tt.wantMath {
				t.Errorf("signatures extension names math: %v, want %v\n%s", got, tt.wantMath, body)
			}
		})
	}
}

// TestVerifyCardRefusesRepeatedMembers: a signed card with a member named
// twice (the signed value and another) does not verify, whichever of the
// two the canonicalization would have kept.
func TestVerifyCardRefusesRepeatedMembers(t *testing.T) {
	t.Parallel()
	signer := mustHybridSigner(t)
	host, _ := signedCards(t, signer, agentcard.Config{BaseURL: "https://agents.example"})
	if _, err := agentcard.Verify(host, signer.KeySet()); err != nil {
		t.Fatalf("as signed: %v", err)
	}
	var card map[string]json.RawMessage
	if err := json.Unmarshal(host, &card); err != nil || card["name"] == nil {
		t.Fatalf("card %s: %v", host, err)
	}
	forged := strings.Replace(string(host), "{", `{"name":"Forged Agent",`, 1)
	if _, err := agentcard.Verify([]byte(forged), signer.KeySet()); err == nil {
		t.Errorf("a card naming name twice verified: %.200s", forged)
	}
}
