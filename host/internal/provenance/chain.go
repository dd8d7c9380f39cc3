package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// ExtURI is the extension that carries provenance: the key of the chain in
// an A2A task's metadata, declared in the Agent Card.
const ExtURI = "https://skillhost.dev/ext/provenance/v1"

// Link kinds.
const (
	KindTransition = "transition" // a state change: From → To
	KindArtifact   = "artifact"   // an artifact (or a plan step's output) was produced
	KindPeer       = "peer"       // a remote peer's signed result was received
)

// maxLinks bounds a chain a verifier reads (a task has a handful of links;
// a plan about 3 per step).
const maxLinks = 4096

// Link is one signed entry of a chain. Its signatures are detached JWS
// ("<protected>..<signature>") over the JCS form of the link without
// Signatures; Prev is the SHA-256 of the previous link's JCS form with its
// signatures ("" for the first link), so each link signs its predecessor.
type Link struct {
	Seq     int       `json:"seq"`
	Kind    string    `json:"kind"`
	Subject string    `json:"subject"`          // what changed: "task:<id>", "plan:<id>", "plan:<id>/step:<id>"
	From    string    `json:"from,omitempty"`   // transition: the state left ("" when created)
	To      string    `json:"to,omitempty"`     // transition: the state entered
	At      time.Time `json:"at"`               // when (UTC)
	By      string    `json:"by"`               // the agent that made the change (its card name)
	Actor   string    `json:"actor,omitempty"`  // the principal that caused it, when a client did (a cancel)
	Reason  string    `json:"reason,omitempty"` // why a transition to a failure state happened (the fault reason)
	// Facts are what the first link binds the chain to (the task's context,
	// skill, plugin, input digest); verifiers compare them where they can.
	Facts    map[string]string `json:"facts,omitempty"`
	Artifact *ArtifactRef      `json:"artifact,omitempty"`
	Peer     *PeerResult       `json:"peer,omitempty"`
	Prev     string            `json:"prev"`
	// Signatures: one detached compact JWS per host key.
	Signatures []string `json:"signatures,omitempty"`
}

// ArtifactRef names an artifact and the SHA-256 of its JCS form.
type ArtifactRef struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	SHA256 string `json:"sha256"`
}

// PeerResult is a remote peer's signed result, recorded when a delegated
// call returns: who answered, its task, that task's final state and the
// head of the peer's own chain (the hash of its last link and that link's
// signatures, verifiable against the peer's JWKS).
type PeerResult struct {
	Agent      string   `json:"agent"`             // the configured peer id
	URL        string   `json:"url,omitempty"`     // the peer's base URL
	JWKS       string   `json:"jwks,omitempty"`    // the peer's JWKS URL (its card's identity extension)
	TaskID     string   `json:"task_id,omitempty"` // the peer's task
	State      string   `json:"state,omitempty"`   // the peer task's final state
	ResultHash string   `json:"result_sha256"`     // SHA-256 of the JCS form of the result received
	Head       string   `json:"head,omitempty"`    // hash of the last link of the peer's chain ("sha256:…")
	HeadSigs   []string `json:"head_signatures,omitempty"`
}

// Chain is a task's or a plan's provenance: links in order.
type Chain struct {
	Links []Link `json:"links"`
}

// Len is the number of links (0 for a nil chain).
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.Links)
}

// Head is the hash of the last link ("" for an empty chain).
func (c *Chain) Head() string {
	if c.Len() == 0 {
		return ""
	}
	h, err := LinkHash(c.Links[len(c.Links)-1])
	if err != nil {
		return ""
	}
	return h
}

// State is the state the chain's last transition entered ("" if none).
func (c *Chain) State() string {
	for i := c.Len() - 1; i >= 0; i-- {
		if c.Links[i].Kind == KindTransition {
			return c.Links[i].To
		}
	}
	return ""
}

// LinkHash is "sha256:<hex>" of the JCS form of l, signatures included.
func LinkHash(l Link) (string, error) {
	b, err := identity.CanonicalValue(l)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// signingInput is the JCS form of l without its signatures.
func signingInput(l Link) ([]byte, error) {
	l.Signatures = nil
	return identity.CanonicalValue(l)
}

// Digest is "sha256:<hex>" of the JCS form of v (marshaled with
// encoding/json): how artifacts, inputs and peer results are bound.
func Digest(v any) (string, error) {
	b, err := identity.CanonicalValue(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Signer appends signed links. Nil-safe: a nil *Signer appends nothing, so
// a host without identity.key_file keeps no provenance.
type Signer struct {
	s  *identity.Signer
	by string
}

// NewSigner signs links with s in the name of agent by (its card name).
// A nil s gives a nil *Signer.
func NewSigner(s *identity.Signer, by string) *Signer {
	if s == nil {
		return nil
	}
	return &Signer{s: s, by: by}
}

// By is the agent name links are made in.
func (p *Signer) By() string {
	if p == nil {
		return ""
	}
	return p.by
}

// Keys is the signer's key set (to verify its own chains).
func (p *Signer) Keys() *identity.KeySet {
	if p == nil {
		return identity.NewKeySet()
	}
	return p.s.KeySet()
}

// Append completes l (seq, by unless set, prev, time unless set) and adds
// it to c, signed. A nil signer does nothing.
func (p *Signer) Append(c *Chain, l Link) error {
	if p == nil || c == nil {
		return nil
	}
	if len(c.Links) >= maxLinks {
		return fmt.Errorf("provenance: chain of %s has %d links already", l.Subject, maxLinks)
	}
	l.Seq = len(c.Links)
	if l.By == "" {
		l.By = p.by
	}
	if l.At.IsZero() {
		l.At = time.Now().UTC()
	}
	l.At = l.At.UTC().Truncate(time.Microsecond)
	l.Prev = c.Head()
	in, err := signingInput(l)
	if err != nil {
		return err
	}
	sigs, err := p.s.SignDetached(in)
	if err != nil {
		return fmt.Errorf("provenance: sign: %w", err)
	}
	l.Signatures = l.Signatures[:0]
	for _, s := range sigs {
		l.Signatures = append(l.Signatures, s.Compact())
	}
	c.Links = append(c.Links, l)
	return nil
}

// DropFinal removes the trailing links after the last transition into a
// non-final state (artifacts and the final transition), for a record whose
// end could not be stored as it was (too large) and ends otherwise.
func (c *Chain) DropFinal(final func(state string) bool) {
	for i := c.Len() - 1; i >= 0; i-- {
		l := c.Links[i]
		if l.Kind == KindTransition && !final(l.To) {
			c.Links = c.Links[:i+1]
			return
		}
	}
}

// FromMetadata reads the chain stored under ExtURI in metadata (an A2A
// task's); nil when there is none.
func FromMetadata(meta map[string]any) (*Chain, error) {
	v, ok := meta[ExtURI]
	if !ok || v == nil {
		return nil, nil
	}
	if c, ok := v.(*Chain); ok {
		return c, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var c Chain
	if err := identity.Decode(b, &c); err != nil {
		return nil, fmt.Errorf("provenance: metadata %s is not a chain: %w", ExtURI, err)
	}
	return &c, nil
}
