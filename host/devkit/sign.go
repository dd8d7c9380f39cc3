package devkit

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/skillhost/skillhost/host/config"
	"github.com/skillhost/skillhost/host/internal/assemble"
	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/plugin"
)

// KeyAlgs are the algorithms Keygen accepts.
var KeyAlgs = []string{string(identity.Ed25519), string(identity.MLDSA65)}

// ErrInvalidAlg is returned by Keygen for an unknown algorithm.
var ErrInvalidAlg = errors.New("unknown key algorithm")

// SignatureFile is the signature file `plugin sign` writes into a plugin folder.
const SignatureFile = plugin.SignatureFile

// Key describes a key pair written by Keygen.
type Key struct {
	Alg     string `json:"alg"`     // ed25519 or ml-dsa-65
	KeyID   string `json:"kid"`     // RFC 7638 thumbprint: the id signatures name
	Private string `json:"private"` // PEM PKCS #8, mode 0600
	Public  string `json:"public"`  // PEM SubjectPublicKeyInfo, Private + ".pub"
}

// Keygen writes a new key of alg to out (mode 0600) and its public key to
// out.pub. Neither file may exist.
func Keygen(out, alg string) (Key, error) {
	a, err := identity.ParseAlg(alg)
	if err != nil {
		return Key{}, fmt.Errorf("%w %q (want %s or %s)", ErrInvalidAlg, alg, KeyAlgs[0], KeyAlgs[1])
	}
	key, err := identity.Generate(a)
	if err != nil {
		return Key{}, err
	}
	if err := identity.WriteKeyPair(out, key); err != nil {
		return Key{}, err
	}
	return Key{Alg: alg, KeyID: key.Public().KeyID(), Private: out, Public: out + identity.PublicSuffix}, nil
}

// Signer is one signature of a plugin folder.
type Signer struct {
	KeyID     string `json:"kid"`
	Alg       string `json:"alg"`                 // JWS alg: EdDSA or ML-DSA-65
	Publisher string `json:"publisher,omitempty"` // the trusted key file's name
	Trusted   bool   `json:"trusted"`             // the key is one of the given public keys
}

// Signature is what a plugin signature covers and who made it.
type Signature struct {
	File           string   `json:"file"` // DIR/plugin.sig
	Name           string   `json:"name"`
	Version        string   `json:"version"`
	ManifestSHA256 string   `json:"manifest_sha256"`
	Wasm           string   `json:"wasm"`
	WasmSHA256     string   `json:"wasm_sha256"`
	Signers        []Signer `json:"signers"`
}

// Sign signs the plugin folder dir — its plugin.yaml together with the
// SHA-256 of its module — with the private keys in keyFiles (one
// signature per key) and writes dir/plugin.sig.
func Sign(dir string, keyFiles []string) (Signature, error) {
	if len(keyFiles) == 0 {
		return Signature{}, errors.New("no key given")
	}
	keys, err := assemble.Keys(config.Identity{KeyFile: keyFiles}, nil)
	if err != nil {
		return Signature{}, err
	}
	signer, err := identity.NewSigner(keys, "")
	if err != nil {
		return Signature{}, err
	}
	st, err := plugin.SignFolder(dir, signer, int64(config.DefaultPolicy().MaxModuleBytes))
	if err != nil {
		return Signature{}, err
	}
	out := signatureOf(dir, st)
	for _, k := range signer.Keys() {
		out.Signers = append(out.Signers, Signer{KeyID: k.KeyID(), Alg: string(k.Alg().JOSE())})
	}
	return out, nil
}

// Verify checks dir/plugin.sig against the folder as it is now. With
// pubFiles (PEM public keys), at least one signature must be by one of
// them, exactly as a host with trust.require_signatures checks; without,
// every signature is checked against the key it carries, which proves the
// folder is unchanged since it was signed but not who signed it.
func Verify(dir string, pubFiles []string) (Signature, error) {
	trust, err := assemble.Trust(config.Trust{RequireSignatures: len(pubFiles) > 0, Publishers: pubFiles})
	if err != nil {
		return Signature{}, err
	}
	s, err := plugin.VerifyFolder(dir, trust, int64(config.DefaultPolicy().MaxModuleBytes))
	if err != nil {
		return Signature{}, err
	}
	out := signatureOf(dir, s.Statement)
	for _, sg := range s.Signers {
		out.Signers = append(out.Signers, Signer(sg))
	}
	return out, nil
}

func signatureOf(dir string, st plugin.Statement) Signature {
	return Signature{File: filepath.Join(dir, plugin.SignatureFile), Name: st.Name, Version: st.Version,
		ManifestSHA256: st.ManifestSHA256, Wasm: st.Wasm, WasmSHA256: st.WasmSHA256}
}
