package agentcard

import (
	"context"
	"fmt"

	a2av1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/plugin"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// Extension URIs of signing.
const (
	// ExtIdentity publishes the host's signing keys: the JWKS URL and each
	// key's id and algorithm. Declared when identity.key_file is set.
	ExtIdentity = "https://skillhost.dev/ext/identity/v1"
	// ExtPluginSignatures says, per plugin, whether its folder is signed
	// (plugin.sig) and by which keys. Declared when any plugin is signed.
	ExtPluginSignatures = "https://skillhost.dev/ext/plugin-signatures/v1"
	// ExtProvenance declares that tasks carry signed provenance chains (in
	// their metadata under this URI; a2a.ExtProvenance).
	ExtProvenance = provenance.ExtURI
)

// withSigningExtensions adds the identity extension (when signer is set)
// and the plugin signatures extension (when a plugin of plugins is signed).
func withSigningExtensions(card *a2av1.AgentCard, signer *identity.Signer, plugins []*plugin.Plugin) {
	if signer != nil {
		var keys []any
		for _, k := range signer.Keys() {
			keys = append(keys, map[string]any{"kid": k.KeyID(), "alg": string(k.Alg().JOSE())})
		}
		params := map[string]any{"keys": keys}
		if signer.JKU() != "" {
			params["jwks"] = signer.JKU()
		}
		card.Capabilities.Extensions = append(card.Capabilities.Extensions, a2av1.AgentExtension{URI: ExtIdentity,
			Description: "the host's signing keys: this card's signatures, task and plan provenance", Params: params},
			provenanceExtension(signer))
	}
	signed := map[string]any{}
	someSigned := false
	for _, p := range sortedPlugins(plugins) {
		entry := map[string]any{"signed": false}
		if p.Signing != nil {
			someSigned = true
			var by []any
			for _, s := range p.Signing.Signers {
				sg := map[string]any{"kid": s.KeyID, "alg": s.Alg, "trusted": s.Trusted}
				if s.Publisher != "" {
					sg["publisher"] = s.Publisher
				}
				by = append(by, sg)
			}
			entry = map[string]any{"signed": true, "signers": by, "wasm_sha256": p.Signing.Statement.WasmSHA256}
		}
		signed[p.Manifest.Name] = entry
	}
	if someSigned {
		card.Capabilities.Extensions = append(card.Capabilities.Extensions, a2av1.AgentExtension{URI: ExtPluginSignatures,
			Description: "who signed each plugin (plugin.sig: its manifest and module SHA-256), by key id",
			Params:      map[string]any{"plugins": signed}})
	}
}

// signCard sets card.Signatures: one JWS per key of signer over the card's
// canonical form (Canonical of its union JSON), protected header
// {alg, kid, typ: "JOSE", jku}. Without a signer the card is left unsigned.
func signCard(ctx context.Context, card *a2av1.AgentCard, signer *identity.Signer) error {
	card.Signatures = nil
	if signer == nil {
		return nil
	}
	body, err := MarshalUnion(ctx, card)
	if err != nil {
		return err
	}
	payload, err := Canonical(body)
	if err != nil {
		return err
	}
	sigs, err := signer.SignDetached(payload)
	if err != nil {
		return fmt.Errorf("a2a: sign card: %w", err)
	}
	for _, s := range sigs {
		card.Signatures = append(card.Signatures, a2av1.AgentCardSignature{Protected: s.Protected, Signature: s.Signature})
	}
	return nil
}

// Verify checks a served card's signatures against keys: at least one
// must verify over the card's canonical form. It returns the key that
// verified.
func Verify(card []byte, keys *identity.KeySet) (*identity.PublicKey, error) {
	payload, err := Canonical(card)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Signatures []identity.Signature `json:"signatures"`
	}
	if err := identity.Decode(card, &doc); err != nil {
		return nil, err
	}
	if len(doc.Signatures) == 0 {
		return nil, fmt.Errorf("a2a: the card has no signatures")
	}
	var errs []error
	for _, s := range doc.Signatures {
		k, err := keys.Verify(payload, s)
		if err == nil {
			return k, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("a2a: no card signature verifies: %v", errs)
}

// taskVerifyMethod is the JSON-RPC method that verifies a task's
// provenance chain (a2a.VerifyMethod; listed in CleverAgentsMethods).
const taskVerifyMethod = "_cleveragents/task/verify"

// provenanceExtension declares the provenance extension of a signing host.
func provenanceExtension(signer *identity.Signer) a2av1.AgentExtension {
	params := map[string]any{"metadata_key": ExtProvenance, "verify_method": taskVerifyMethod,
		"links": []any{provenance.KindTransition, provenance.KindArtifact, provenance.KindPeer}}
	if signer.JKU() != "" {
		params["jwks"] = signer.JKU()
	}
	return a2av1.AgentExtension{URI: ExtProvenance, Params: params,
		Description: "every task and plan transition and artifact signed by the host key, hash-chained; in task metadata under this URI"}
}
