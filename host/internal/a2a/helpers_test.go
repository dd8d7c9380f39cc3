package a2a_test

import (
	"os"
	"testing"

	"github.com/skillhost/skillhost/host/internal/identity"
)

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustHybridSigner is a host signer with an Ed25519 and an ML-DSA-65 key
// (as agentcard's tests sign cards with).
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
	s, err := identity.NewSigner(keys, "https://agents.example/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
