package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/cloudflare/circl/pki"
	"github.com/cloudflare/circl/sign/mldsa/mldsa65"
	jose "github.com/go-jose/go-jose/v4"
)

// Alg names a signature algorithm as `skillhost keygen --alg` spells it.
type Alg string

// The supported algorithms.
const (
	Ed25519 Alg = "ed25519"
	MLDSA65 Alg = "ml-dsa-65"
)

// ParseAlg returns the algorithm called s.
func ParseAlg(s string) (Alg, error) {
	switch Alg(s) {
	case Ed25519, MLDSA65:
		return Alg(s), nil
	}
	return "", fmt.Errorf("unknown key algorithm %q (want ed25519 or ml-dsa-65)", s)
}

// JOSE is the algorithm's JWS "alg" value.
func (a Alg) JOSE() jose.SignatureAlgorithm {
	if a == MLDSA65 {
		return jose.MLDSA65
	}
	return jose.EdDSA
}

// PEM block types of key files.
const (
	pemPrivate = "PRIVATE KEY"
	pemPublic  = "PUBLIC KEY"
)

var b64 = base64.RawURLEncoding

// PublicKey is a verification key. It is immutable and safe for concurrent use.
type PublicKey struct {
	alg Alg
	ed  ed25519.PublicKey
	ml  *mldsa65.PublicKey
	kid string
}

func newPublic(alg Alg, ed ed25519.PublicKey, ml *mldsa65.PublicKey) *PublicKey {
	p := &PublicKey{alg: alg, ed: ed, ml: ml}
	sum := sha256.Sum256([]byte(p.thumbprintInput()))
	p.kid = b64.EncodeToString(sum[:])
	return p
}

// Alg is the key's algorithm.
func (p *PublicKey) Alg() Alg { return p.alg }

// KeyID is the key's RFC 7638 JWK thumbprint (SHA-256, base64url).
func (p *PublicKey) KeyID() string { return p.kid }

// Bytes is the raw public key (32 bytes for Ed25519, 1952 for ML-DSA-65).
func (p *PublicKey) Bytes() []byte {
	if p.alg == MLDSA65 {
		return p.ml.Bytes()
	}
	return append([]byte(nil), p.ed...)
}

// thumbprintInput is the RFC 7638 input: the required members in
// lexicographic order (RFC 8037 for OKP, RFC 9964 for AKP).
func (p *PublicKey) thumbprintInput() string {
	x := b64.EncodeToString(p.Bytes())
	if p.alg == MLDSA65 {
		return `{"alg":"ML-DSA-65","kty":"AKP","pub":"` + x + `"}`
	}
	return `{"crv":"Ed25519","kty":"OKP","x":"` + x + `"}`
}

// Verify reports whether sig is a valid signature of msg (ML-DSA with the
// empty context string, as RFC 9964 signs).
func (p *PublicKey) Verify(msg, sig []byte) bool {
	if p.alg == MLDSA65 {
		return mldsa65.Verify(p.ml, msg, nil, sig)
	}
	return ed25519.Verify(p.ed, msg, sig)
}

// VerifyPayload implements jose.OpaqueVerifier.
func (p *PublicKey) VerifyPayload(payload, sig []byte, alg jose.SignatureAlgorithm) error {
	if alg != p.alg.JOSE() {
		return fmt.Errorf("identity: key %s is %s, the signature says %s", p.kid, p.alg.JOSE(), alg)
	}
	if !p.Verify(payload, sig) {
		return errors.New("identity: signature does not verify")
	}
	return nil
}

// Equal reports whether q is the same key.
func (p *PublicKey) Equal(q *PublicKey) bool { return q != nil && p.kid == q.kid }

// MarshalPEM encodes the key as a PEM "PUBLIC KEY" (SubjectPublicKeyInfo).
func (p *PublicKey) MarshalPEM() ([]byte, error) {
	var der []byte
	var err error
	if p.alg == MLDSA65 {
		der, err = pki.MarshalPKIXPublicKey(p.ml)
	} else {
		der, err = x509.MarshalPKIXPublicKey(p.ed)
	}
	if err != nil {
		return nil, fmt.Errorf("identity: encode public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: der}), nil
}

// ParsePublicPEM decodes a PEM "PUBLIC KEY" of either algorithm. A PEM
// private key is accepted too (its public half is returned), so a trust
// list may name either file.
func ParsePublicPEM(data []byte) (*PublicKey, error) {
	block, err := onePEM(data)
	if err != nil {
		return nil, err
	}
	switch block.Type {
	case pemPublic:
	case pemPrivate:
		k, err := ParsePrivatePEM(data)
		if err != nil {
			return nil, err
		}
		return k.Public(), nil
	default:
		return nil, fmt.Errorf("identity: PEM block %q is not a public key", block.Type)
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		if ed, ok := k.(ed25519.PublicKey); ok {
			return newPublic(Ed25519, ed, nil), nil
		}
		return nil, fmt.Errorf("identity: %T public keys are not supported (want Ed25519 or ML-DSA-65)", k)
	}
	k, err := pki.UnmarshalPKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("identity: decode public key: %w", err)
	}
	ml, ok := k.(*mldsa65.PublicKey)
	if !ok {
		return nil, fmt.Errorf("identity: %s public keys are not supported (want Ed25519 or ML-DSA-65)", k.Scheme().Name())
	}
	return newPublic(MLDSA65, nil, ml), nil
}

// PrivateKey is a signing key. It is immutable and safe for concurrent use.
type PrivateKey struct {
	pub *PublicKey
	ed  ed25519.PrivateKey
	ml  *mldsa65.PrivateKey
}

// Generate returns a new key from crypto/rand.
func Generate(alg Alg) (*PrivateKey, error) {
	switch alg {
	case Ed25519:
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("identity: generate Ed25519 key: %w", err)
		}
		return &PrivateKey{pub: newPublic(Ed25519, pub, nil), ed: priv}, nil
	case MLDSA65:
		pub, priv, err := mldsa65.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("identity: generate ML-DSA-65 key: %w", err)
		}
		return &PrivateKey{pub: newPublic(MLDSA65, nil, pub), ml: priv}, nil
	}
	_, err := ParseAlg(string(alg))
	return nil, err
}

// Public is the key's public half.
func (k *PrivateKey) Public() *PublicKey { return k.pub }

// Sign signs msg: Ed25519, or hedged ML-DSA-65 with the empty context.
func (k *PrivateKey) Sign(msg []byte) ([]byte, error) {
	if k.pub.alg == MLDSA65 {
		sig := make([]byte, mldsa65.SignatureSize)
		if err := mldsa65.SignTo(k.ml, msg, nil, true, sig); err != nil {
			return nil, fmt.Errorf("identity: ML-DSA-65 sign: %w", err)
		}
		return sig, nil
	}
	return ed25519.Sign(k.ed, msg), nil
}

// MarshalPEM encodes the key as a PEM "PRIVATE KEY" (PKCS #8; the seed
// form of RFC 9881 for ML-DSA-65).
func (k *PrivateKey) MarshalPEM() ([]byte, error) {
	var der []byte
	var err error
	if k.pub.alg == MLDSA65 {
		der, err = pki.MarshalPKIXPrivateKey(k.ml)
	} else {
		der, err = x509.MarshalPKCS8PrivateKey(k.ed)
	}
	if err != nil {
		return nil, fmt.Errorf("identity: encode private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: der}), nil
}

// ParsePrivatePEM decodes a PEM "PRIVATE KEY" (PKCS #8) of either algorithm.
func ParsePrivatePEM(data []byte) (*PrivateKey, error) {
	block, err := onePEM(data)
	if err != nil {
		return nil, err
	}
	if block.Type != pemPrivate {
		return nil, fmt.Errorf("identity: PEM block %q is not a PKCS #8 private key", block.Type)
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if ed, ok := k.(ed25519.PrivateKey); ok {
			return &PrivateKey{pub: newPublic(Ed25519, ed.Public().(ed25519.PublicKey), nil), ed: ed}, nil
		}
		return nil, fmt.Errorf("identity: %T private keys are not supported (want Ed25519 or ML-DSA-65)", k)
	}
	k, err := pki.UnmarshalPKIXPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("identity: decode private key: %w", err)
	}
	ml, ok := k.(*mldsa65.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("identity: %s private keys are not supported (want Ed25519 or ML-DSA-65)", k.Scheme().Name())
	}
	return &PrivateKey{pub: newPublic(MLDSA65, nil, ml.Public().(*mldsa65.PublicKey)), ml: ml}, nil
}

// onePEM decodes the one PEM block of a key file: anything but whitespace
// after it is refused, so a file holding two keys is never read as the
// first one alone (a trust list would silently miss the second).
func onePEM(data []byte) (*pem.Block, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("identity: no PEM block found")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("identity: more than one PEM block: a key file holds exactly one key")
	}
	return block, nil
}
