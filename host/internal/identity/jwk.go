package identity

import (
	"errors"
	"fmt"
	"sort"

	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
)

// JWKSPath is where a host serves its public keys.
const JWKSPath = "/.well-known/jwks.json"

// MaxJWKSBytes bounds a JWKS document read from elsewhere.
const MaxJWKSBytes = 1 << 20

// maxJWKSKeys bounds the keys of one JWKS.
const maxJWKSKeys = 64

// JWK is a public key in JSON Web Key form: OKP/Ed25519 (RFC 8037) or
// AKP/ML-DSA-65 (RFC 9964), with kid, alg and use "sig".
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	Pub string `json:"pub,omitempty"`
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Use string `json:"use,omitempty"`
}

// JWK returns the key as a JWK.
func (p *PublicKey) JWK() JWK {
	x := b64.EncodeToString(p.Bytes())
	if p.alg == MLDSA65 {
		return JWK{Kty: "AKP", Pub: x, Alg: string(p.alg.JOSE()), Kid: p.kid, Use: "sig"}
	}
	return JWK{Kty: "OKP", Crv: "Ed25519", X: x, Alg: string(p.alg.JOSE()), Kid: p.kid, Use: "sig"}
}

// PublicKey decodes the JWK. Its kid, when present, must be the key's
// thumbprint: a kid is never taken on trust.
func (j JWK) PublicKey() (*PublicKey, error) {
	var p *PublicKey
	switch {
	case j.Kty == "OKP" && j.Crv == "Ed25519":
		x, err := b64.DecodeString(j.X)
		if err != nil || len(x) != 32 {
			return nil, errors.New("identity: JWK: bad Ed25519 x")
		}
		p = newPublic(Ed25519, x, nil)
	case j.Kty == "AKP" && j.Alg == "ML-DSA-65":
		raw, err := b64.DecodeString(j.Pub)
		if err != nil || len(raw) != mldsa65.PublicKeySize {
			return nil, errors.New("identity: JWK: bad ML-DSA-65 pub")
		}
		var pk mldsa65.PublicKey
		if err := pk.UnmarshalBinary(raw); err != nil {
			return nil, fmt.Errorf("identity: JWK: %w", err)
		}
		p = newPublic(MLDSA65, nil, &pk)
	default:
		return nil, fmt.Errorf("identity: JWK: unsupported key type %q (crv %q, alg %q)", j.Kty, j.Crv, j.Alg)
	}
	if j.Kid != "" && j.Kid != p.kid {
		return nil, fmt.Errorf("identity: JWK kid %q is not the key's thumbprint %s", j.Kid, p.kid)
	}
	return p, nil
}

// JWKS is a JSON Web Key Set.
type JWKS struct {
	Keys []JWK `json:"keys"`
}

// KeySet is a set of verification keys by key id. It is immutable.
type KeySet struct {
	byKID map[string]*PublicKey
}

// NewKeySet returns the set of keys.
func NewKeySet(keys ...*PublicKey) *KeySet {
	s := &KeySet{byKID: map[string]*PublicKey{}}
	for _, k := range keys {
		if k != nil {
			s.byKID[k.kid] = k
		}
	}
	return s
}

// ParseJWKS decodes a JWKS document. Keys of other types are skipped; a key
// whose kid is not its thumbprint is an error.
func ParseJWKS(data []byte) (*KeySet, error) {
	if len(data) > MaxJWKSBytes {
		return nil, fmt.Errorf("identity: JWKS larger than %d bytes", MaxJWKSBytes)
	}
	var doc JWKS
	if err := Decode(data, &doc); err != nil {
		return nil, fmt.Errorf("identity: JWKS: %w", err)
	}
	if len(doc.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("identity: JWKS has %d keys, more than %d", len(doc.Keys), maxJWKSKeys)
	}
	var keys []*PublicKey
	for _, j := range doc.Keys {
		if j.Kty != "OKP" && j.Kty != "AKP" {
			continue
		}
		k, err := j.PublicKey()
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return NewKeySet(keys...), nil
}

// Key returns the key with id kid.
func (s *KeySet) Key(kid string) (*PublicKey, bool) {
	if s == nil {
		return nil, false
	}
	k, ok := s.byKID[kid]
	return k, ok
}

// Len is the number of keys.
func (s *KeySet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byKID)
}

// Keys lists the keys, sorted by id.
func (s *KeySet) Keys() []*PublicKey {
	if s == nil {
		return nil
	}
	out := make([]*PublicKey, 0, len(s.byKID))
	for _, k := range s.byKID {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].kid < out[j].kid })
	return out
}

// JWKS returns the set as a JWKS document.
func (s *KeySet) JWKS() JWKS {
	doc := JWKS{Keys: []JWK{}}
	for _, k := range s.Keys() {
		doc.Keys = append(doc.Keys, k.JWK())
	}
	return doc
}
