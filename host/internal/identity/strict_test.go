package identity_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// TestDecodeIsStrict: names match case-sensitively (another case is an
// unknown member, never the field), and a name repeated at any depth —
// spelled alike or through an escape — is refused, where encoding/json
// folds case and keeps the last.
func TestDecodeIsStrict(t *testing.T) {
	t.Parallel()
	type status struct {
		State string `json:"state"`
	}
	type doc struct {
		ID     string `json:"id"`
		Status status `json:"status"`
	}
	tests := []struct {
		name    string
		in      string
		want    doc  // when accepted
		ok      bool // Decode accepts it
		okKnown bool // DecodeKnown accepts it
		v1      doc  // what encoding/json makes of it
	}{
		{"plain", `{"id":"a","status":{"state":"s"}}`, doc{"a", status{"s"}}, true, true, doc{"a", status{"s"}}},
		{"id then ID", `{"id":"forged","ID":"real"}`, doc{ID: "forged"}, true, false, doc{ID: "real"}},
		{"other case only", `{"ID":"real"}`, doc{}, true, false, doc{ID: "real"}},
		{"repeated name", `{"id":"forged","id":"real"}`, doc{}, false, false, doc{ID: "real"}},
		{"repeated through an escape", `{"id":"forged","\u0069d":"real"}`, doc{}, false, false, doc{ID: "real"}},
		{"repeated inside", `{"status":{"state":"forged","state":"real"}}`, doc{}, false, false, doc{Status: status{"real"}}},
		{"invalid UTF-8", "{\"id\":\"\xff\"}", doc{}, false, false, doc{ID: "\ufffd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var v1 doc
			if err := json.Unmarshal([]byte(tt.in), &v1); err != nil || v1 != tt.v1 {
				t.Fatalf("encoding/json reads %+v (%v), the case this test is about is %+v", v1, err, tt.v1)
			}
			var got doc
			err := identity.Decode([]byte(tt.in), &got)
			if (err == nil) != tt.ok {
				t.Fatalf("Decode: %v, want ok=%v", err, tt.ok)
			}
			if err == nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Decode (-want +got):\n%s", diff)
				}
			}
			if err := identity.DecodeKnown([]byte(tt.in), new(doc)); (err == nil) != tt.okKnown {
				t.Errorf("DecodeKnown: %v, want ok=%v", err, tt.okKnown)
			}
			if err := identity.CheckStrict([]byte(tt.in)); (err == nil) != tt.ok {
				t.Errorf("CheckStrict: %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// TestParseJWKSIsStrict: a JWKS naming "keys" twice is refused (which set
// would a verifier trust?); "Keys" is not "keys".
func TestParseJWKSIsStrict(t *testing.T) {
	t.Parallel()
	a, err := identity.Generate(identity.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	b, err := identity.Generate(identity.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	ka, _ := json.Marshal(a.Public().JWK())
	kb, _ := json.Marshal(b.Public().JWK())
	if set, err := identity.ParseJWKS([]byte(`{"keys":[` + string(ka) + `]}`)); err != nil || set.Len() != 1 {
		t.Fatalf("one key: %v", err)
	}
	if _, err := identity.ParseJWKS([]byte(`{"keys":[` + string(ka) + `],"keys":[` + string(kb) + `]}`)); err == nil {
		t.Error("a JWKS naming keys twice was accepted")
	}
	if set, err := identity.ParseJWKS([]byte(`{"Keys":[` + string(kb) + `]}`)); err != nil || set.Len() != 0 {
		t.Errorf(`"Keys" read as keys: %v, %d keys`, err, set.Len())
	}
}

// TestKeyFileHoldsOneKey: a PEM file with a second key after the first is
// refused, not read as its first key alone (a trust list naming it would
// silently trust one key of two).
func TestKeyFileHoldsOneKey(t *testing.T) {
	t.Parallel()
	var pems [][]byte
	for range 2 {
		k, err := identity.Generate(identity.Ed25519)
		if err != nil {
			t.Fatal(err)
		}
		b, err := k.Public().MarshalPEM()
		if err != nil {
			t.Fatal(err)
		}
		pems = append(pems, b)
	}
	if _, err := identity.ParsePublicPEM(append(append([]byte{}, pems[0]...), '\n')); err != nil {
		t.Fatalf("one key: %v", err)
	}
	if _, err := identity.ParsePublicPEM(append(append([]byte{}, pems[0]...), pems[1]...)); err == nil {
		t.Error("a file of two keys was read as one")
	}
}
