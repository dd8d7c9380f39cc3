package identity_test

import (
	"crypto"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/identity"
)

func mustKey(t *testing.T, alg identity.Alg) *identity.PrivateKey {
	t.Helper()
	k, err := identity.Generate(alg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKeyFilesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, alg := range []identity.Alg{identity.Ed25519, identity.MLDSA65} {
		t.Run(string(alg), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "host.key")
			key := mustKey(t, alg)
			if err := identity.WriteKeyPair(path, key); err != nil {
				t.Fatal(err)
			}
			for file, want := range map[string]os.FileMode{path: 0o600, path + ".pub": 0o644} {
				st, err := os.Stat(file)
				if err != nil {
					t.Fatal(err)
				}
				if got := st.Mode().Perm(); got != want {
					t.Errorf("%s mode %o, want %o", filepath.Base(file), got, want)
				}
			}
			priv, loose, err := identity.LoadPrivateFile(path)
			if err != nil || loose {
				t.Fatalf("load private: %v (loose %v)", err, loose)
			}
			pub, err := identity.LoadPublicFile(path + ".pub")
			if err != nil {
				t.Fatal(err)
			}
			if priv.Public().KeyID() != key.Public().KeyID() || !pub.Equal(key.Public()) || pub.Alg() != alg {
				t.Errorf("round trip changed the key: %s %s %s", key.Public().KeyID(), priv.Public().KeyID(), pub.KeyID())
			}
			fromPriv, err := identity.LoadPublicFile(path) // a trust list may name the private file
			if err != nil || !fromPriv.Equal(pub) {
				t.Errorf("public half of the private file: %v", err)
			}
			if err := identity.WriteKeyPair(path, key); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
				t.Errorf("second write: %v, want a refusal", err)
			}
			pemText, _ := os.ReadFile(path)
			if !strings.HasPrefix(string(pemText), "-----BEGIN PRIVATE KEY-----") {
				t.Errorf("private key file is not PKCS #8 PEM: %.40q", pemText)
			}
		})
	}
}

func TestBadKeyFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct{ name, content, want string }{
		{"not pem", "hello", "no PEM block"},
		{"certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "not a"},
		{"garbage der", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", "decode public key"},
		{"huge", strings.Repeat("A", identity.MaxKeyFileBytes+10), "not a key file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := identity.LoadPublicFile(p); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("LoadPublicFile: %v, want %q", err, tt.want)
			}
		})
	}
}

// A detached JWS verifies with its key, fails after a one-byte change of
// the payload, and fails against a set without the key.
func TestSignDetached(t *testing.T) {
	t.Parallel()
	ed, ml := mustKey(t, identity.Ed25519), mustKey(t, identity.MLDSA65)
	signer, err := identity.NewSigner([]*identity.PrivateKey{ed, ml}, "https://agents.example/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"name":"skillhost"}`)
	sigs, err := signer.SignDetached(payload)
	if err != nil {
		t.Fatal(err)
	}
	if len(sigs) != 2 {
		t.Fatalf("%d signatures, want one per key", len(sigs))
	}
	for i, key := range []*identity.PrivateKey{ed, ml} {
		h := mustHeader(t, sigs[i])
		want := map[string]any{"alg": string(key.Public().Alg().JOSE()), "kid": key.Public().KeyID(), "typ": "JOSE",
			"jku": "https://agents.example/.well-known/jwks.json"}
		if diff := cmp.Diff(want, h); diff != "" {
			t.Errorf("protected header (-want +got):\n%s", diff)
		}
		got, err := signer.KeySet().Verify(payload, sigs[i])
		if err != nil || !got.Equal(key.Public()) {
			t.Errorf("verify %s: %v", key.Public().Alg(), err)
		}
		tampered := append([]byte(nil), payload...)
		tampered[3] ^= 1
		if _, err := signer.KeySet().Verify(tampered, sigs[i]); err == nil {
			t.Errorf("%s: a changed payload verified", key.Public().Alg())
		}
		var unknown *identity.UnknownKeyError
		if _, err := identity.NewKeySet(mustKey(t, identity.Ed25519).Public()).Verify(payload, sigs[i]); !errors.As(err, &unknown) {
			t.Errorf("%s against another key: %v, want UnknownKeyError", key.Public().Alg(), err)
		}
	}
}

// The JWKS and the signatures read by go-jose's own key types (Ed25519)
// and by circl directly (ML-DSA-65, which go-jose knows only on Go 1.27).
func TestJWKSIndependently(t *testing.T) {
	t.Parallel()
	ed, ml := mustKey(t, identity.Ed25519), mustKey(t, identity.MLDSA65)
	signer, err := identity.NewSigner([]*identity.PrivateKey{ed, ml}, "")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := json.Marshal(signer.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("payload")
	sigs, err := signer.SignDetached(payload)
	if err != nil {
		t.Fatal(err)
	}

	var raw struct{ Keys []json.RawMessage }
	if err := json.Unmarshal(doc, &raw); err != nil || len(raw.Keys) != 2 {
		t.Fatalf("jwks %s: %v", doc, err)
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(raw.Keys[0]); err != nil {
		t.Fatal(err)
	}
	if tp, _ := jwk.Thumbprint(crypto.SHA256); base64.RawURLEncoding.EncodeToString(tp) != ed.Public().KeyID() || jwk.KeyID != ed.Public().KeyID() {
		t.Errorf("kid %s is not go-jose's thumbprint", jwk.KeyID)
	}
	jws, err := jose.ParseDetached(sigs[0].Compact(), payload, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	if err := jws.DetachedVerify(payload, jwk.Key.(ed25519.PublicKey)); err != nil {
		t.Errorf("go-jose rejects the Ed25519 signature: %v", err)
	}

	var akp struct{ Kty, Alg, Pub, Kid string }
	if err := json.Unmarshal(raw.Keys[1], &akp); err != nil {
		t.Fatal(err)
	}
	pubBytes, _ := base64.RawURLEncoding.DecodeString(akp.Pub)
	var pk mldsa65.PublicKey
	if err := pk.UnmarshalBinary(pubBytes); err != nil || akp.Kty != "AKP" || akp.Alg != "ML-DSA-65" {
		t.Fatalf("AKP key %+v: %v", akp, err)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(sigs[1].Signature)
	input := sigs[1].Protected + "." + base64.RawURLEncoding.EncodeToString(payload)
	if !mldsa65.Verify(&pk, []byte(input), nil, sig) {
		t.Error("circl rejects the ML-DSA-65 signature over the JWS signing input")
	}
	back, err := identity.ParseJWKS(doc)
	if err != nil || back.Len() != 2 {
		t.Errorf("ParseJWKS: %v (%d keys)", err, back.Len())
	}
}

func TestJWKSRefusesForgedKid(t *testing.T) {
	t.Parallel()
	j := mustKey(t, identity.Ed25519).Public().JWK()
	j.Kid = mustKey(t, identity.Ed25519).Public().KeyID()
	doc, _ := json.Marshal(identity.JWKS{Keys: []identity.JWK{j}})
	if _, err := identity.ParseJWKS(doc); err == nil || !strings.Contains(err.Error(), "thumbprint") {
		t.Errorf("ParseJWKS with a foreign kid: %v", err)
	}
}

// RFC 8785 examples: key order by UTF-16 code units, ECMAScript numbers,
// minimal string escapes.
func TestCanonical(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{`{"n":[1.0,1e21,0.000001,1e-7,-0,333333333.33333329,1E30,4.50]}`, `{"n":[1,1e+21,0.000001,1e-7,0,333333333.3333333,1e+30,4.5]}`},
		{`{"\u20ac":1,"\r":2,"\ud83d\ude00":3,"1":4,"\u0080":5}`, "{\"\\r\":2,\"1\":4,\"\u0080\":5,\"\u20ac\":1,\"\U0001F600\":3}"},
		{`{"s":"<\u00e9\u001f\"/>"}`, "{\"s\":\"<\u00e9\\u001f\\\"/>\"}"},
	}
	for _, tt := range tests {
		got, err := identity.Canonical([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("Canonical(%s) (-want +got):\n%s", tt.in, diff)
		}
	}
	if _, err := identity.Canonical([]byte(strings.Repeat("[", 20000) + strings.Repeat("]", 20000))); err == nil {
		t.Error("a 20000-deep document was canonicalized")
	}
}

func mustHeader(t *testing.T, s identity.Signature) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s.Protected)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}
