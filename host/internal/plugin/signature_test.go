package plugin

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/sandbox"
	"github.com/skillhost/skillhost/host/internal/testutil"
)

func mustSigner(t *testing.T, algs ...identity.Alg) *identity.Signer {
	t.Helper()
	var keys []*identity.PrivateKey
	for _, a := range algs {
		k, err := identity.Generate(a)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	s, err := identity.NewSigner(keys, "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func publishers(s *identity.Signer, name string) []Publisher {
	var out []Publisher
	for _, k := range s.Keys() {
		out = append(out, Publisher{Name: name, Key: k})
	}
	return out
}

func mustSign(t *testing.T, dir string, s *identity.Signer) {
	t.Helper()
	if _, err := SignFolder(dir, s, 64<<20); err != nil {
		t.Fatal(err)
	}
}

func newTrustRegistry(t *testing.T, trust Trust) *Registry {
	t.Helper()
	ctx := context.Background()
	rt, err := sandbox.NewRuntime(ctx, sandbox.RuntimeConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(rt, RegistryOptions{Trust: trust, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Debounce: 50 * time.Millisecond})
	t.Cleanup(func() {
		_ = r.Close(ctx)
		_ = rt.Close(ctx)
	})
	return r
}

// Under require_signatures only a folder signed by a trusted publisher, and
// unchanged since, loads; a broken signature is refused even when
// signatures are optional.
func TestSignaturePolicyAtLoad(t *testing.T) {
	t.Parallel()
	alice := mustSigner(t, identity.Ed25519)
	hybrid := mustSigner(t, identity.Ed25519, identity.MLDSA65)
	mallory := mustSigner(t, identity.Ed25519)
	trusted := Trust{Require: true, Publishers: append(publishers(alice, "alice"), publishers(hybrid, "hybrid")...)}
	tests := []struct {
		name    string
		trust   Trust
		prepare func(t *testing.T, dir string)
		problem string // "" = loads
		signers []string
	}{
		{"signed by a trusted publisher", trusted, func(t *testing.T, dir string) { mustSign(t, dir, alice) }, "", []string{"alice"}},
		{"hybrid signature", trusted, func(t *testing.T, dir string) { mustSign(t, dir, hybrid) }, "", []string{"hybrid", "hybrid"}},
		{"unsigned", trusted, func(*testing.T, string) {}, "unsigned plugin refused", nil},
		{"untrusted publisher", trusted, func(t *testing.T, dir string) { mustSign(t, dir, mallory) }, "untrusted publisher: signed by key " + mallory.Keys()[0].KeyID(), nil},
		{"module replaced after signing", trusted, func(t *testing.T, dir string) {
			mustSign(t, dir, alice)
			mustWrite(t, filepath.Join(dir, "plugin.wasm"), string(mustRead(t, fixture("extism_log"))))
		}, "tampered: the folder does not match its signature (module sha256", nil},
		{"manifest edited after signing", trusted, func(t *testing.T, dir string) {
			mustSign(t, dir, alice)
			m := mustRead(t, filepath.Join(dir, ManifestFile))
			mustWrite(t, filepath.Join(dir, ManifestFile), strings.Replace(string(m), "test plugin", "test plugin!", 1))
		}, "tampered: the folder does not match its signature (plugin.yaml sha256", nil},
		{"signature bytes changed", trusted, func(t *testing.T, dir string) {
			mustSign(t, dir, alice)
			flipSignature(t, dir)
		}, "does not verify", nil},
		{"garbage signature file", trusted, func(t *testing.T, dir string) {
			mustWrite(t, filepath.Join(dir, SignatureFile), "{}")
		}, "not a JWS", nil},
		{"optional: unsigned loads", Trust{}, func(*testing.T, string) {}, "", nil},
		{"optional: untrusted signer loads, shown untrusted", Trust{}, func(t *testing.T, dir string) { mustSign(t, dir, mallory) }, "", []string{""}},
		{"optional: tampered still refused", Trust{}, func(t *testing.T, dir string) {
			mustSign(t, dir, mallory)
			mustWrite(t, filepath.Join(dir, "plugin.wasm"), string(mustRead(t, fixture("extism_log"))))
		}, "tampered", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := pluginSpec{name: "signed"}.write(t, root)
			tt.prepare(t, dir)
			r := newTrustRegistry(t, tt.trust)
			err := r.LoadDir(context.Background(), root)
			if tt.problem != "" {
				if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, SignatureFile)+": ") || !strings.Contains(err.Error(), tt.problem) {
					t.Fatalf("LoadDir: %v, want a problem on %s with %q", err, SignatureFile, tt.problem)
				}
				if _, ok := r.Snapshot().Plugin("signed"); ok {
					t.Fatal("refused plugin is loaded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p, ok := r.Snapshot().Plugin("signed")
			if !ok {
				t.Fatal("plugin not loaded")
			}
			var got []string
			if p.Signing != nil {
				for _, s := range p.Signing.Signers {
					got = append(got, s.Publisher)
				}
			}
			if diff := cmp.Diff(tt.signers, got); diff != "" {
				t.Errorf("signers (-want +got):\n%s", diff)
			}
		})
	}
}

// A signed plugin replaced by an unsigned (or tampered) one during hot
// reload keeps its signed revision serving; a newly signed revision loads.
func TestUnsignedReplacementKeepsSignedRevision(t *testing.T) {
	t.Parallel()
	alice := mustSigner(t, identity.Ed25519)
	root := t.TempDir()
	dir := pluginSpec{name: "keep"}.write(t, root)
	mustSign(t, dir, alice)
	r := newTrustRegistry(t, Trust{Require: true, Publishers: publishers(alice, "alice")})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	watching(t, r, root)
	sigFile := filepath.Join(dir, SignatureFile)

	// Replaced in place by an unsigned revision: every state on the way is
	// the signed folder or one that is refused.
	if err := os.Remove(sigFile); err != nil {
		t.Fatal(err)
	}
	pluginSpec{name: "keep", version: "2.0.0"}.write(t, root)
	testutil.Eventually(t, 10*time.Second, "unsigned revision refused", func() bool {
		ps := r.Problems()
		return len(ps) == 1 && strings.HasPrefix(ps[0].Message, sigFile+": unsigned plugin refused")
	})
	if got := served(r, "keep-echo"); got != "keep@1.0.0" {
		t.Fatalf("after an unsigned replacement, keep-echo served by %s; want the signed keep@1.0.0", got)
	}

	// Signed again: loads.
	mustSign(t, dir, alice)
	testutil.Eventually(t, 10*time.Second, "signed revision serving", func() bool { return served(r, "keep-echo") == "keep@2.0.0" })
	if ps := r.Problems(); len(ps) != 0 {
		t.Errorf("problem not cleared: %+v", ps)
	}
}

func TestVerifyFolder(t *testing.T) {
	t.Parallel()
	alice := mustSigner(t, identity.Ed25519, identity.MLDSA65)
	dir := pluginSpec{name: "v"}.write(t, t.TempDir())
	if _, err := VerifyFolder(dir, Trust{}, 64<<20); err == nil || !strings.Contains(err.Error(), "not signed") {
		t.Errorf("unsigned: %v", err)
	}
	st, err := SignFolder(dir, alice, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "v" || st.Version != "1.0.0" || st.Wasm != "plugin.wasm" || len(st.WasmSHA256) != 64 || len(st.ManifestSHA256) != 64 {
		t.Errorf("statement %+v", st)
	}
	s, err := VerifyFolder(dir, Trust{}, 64<<20)
	if err != nil || len(s.Signers) != 2 || s.Trusted() {
		t.Fatalf("without a trust list: %+v, %v", s, err)
	}
	s, err = VerifyFolder(dir, Trust{Require: true, Publishers: publishers(alice, "alice")[:1]}, 64<<20)
	if err != nil || !s.Trusted() || s.Signers[0].Publisher != "alice" {
		t.Fatalf("with alice's Ed25519 key: %+v, %v", s, err)
	}
}

// flipSignature changes one character of the first signature in plugin.sig.
func flipSignature(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, SignatureFile)
	b := mustRead(t, path)
	i := strings.Index(string(b), `"signature": "`) + len(`"signature": "`) + 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	mustWrite(t, path, string(b))
}

// A published plugin carries plugin.sig in its archive and is checked like
// a local one where the mirror unpacks it.
func TestPublishedPluginKeepsItsSignature(t *testing.T) {
	t.Parallel()
	alice := mustSigner(t, identity.Ed25519)
	dir := pluginSpec{name: "pub"}.write(t, t.TempDir())
	mustSign(t, dir, alice)
	_, archive, err := Pack(dir, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := unpack(bytes.NewReader(archive), filepath.Join(root, "pub"), 64<<20); err != nil {
		t.Fatal(err)
	}
	r := newTrustRegistry(t, Trust{Require: true, Publishers: publishers(alice, "alice")})
	if err := r.LoadDir(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	if p, ok := r.Snapshot().Plugin("pub"); !ok || !p.Signing.Trusted() {
		t.Fatalf("published signed plugin not loaded as signed: %v", ok)
	}
}
