package provenance

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// PeerOf builds the PeerResult of a delegated call from what the peer
// answered: task is the peer's A2A task (v1.0 JSON; its provenance chain,
// when it has one, gives the head and the head link's signatures) and
// result the value the caller received from it (bound by its digest).
// agent, url and jwks name the peer (jwks: its card's identity extension,
// "" when unknown). A peer without provenance still gets a result digest.
//
// A remote-agent plan executor returns it in plan.StepOutcome.Peer; the
// plan's chain then holds it as a peer link signed by this host.
func PeerOf(agent, url, jwks string, task []byte, result any) (*PeerResult, error) {
	d, err := Digest(result)
	if err != nil {
		return nil, fmt.Errorf("provenance: peer result: %w", err)
	}
	p := &PeerResult{Agent: agent, URL: url, JWKS: jwks, ResultHash: d}
	if len(task) == 0 {
		return p, nil
	}
	var t taskDoc
	if err := identity.Decode(task, &t); err != nil {
		return nil, fmt.Errorf("provenance: peer task: %w", err)
	}
	p.TaskID, p.State = t.ID, t.Status.State
	raw, ok := t.Metadata[ExtURI]
	if !ok {
		return p, nil
	}
	var doc struct {
		Links []json.RawMessage `json:"links"`
	}
	if err := identity.Decode(raw, &doc); err != nil || len(doc.Links) == 0 {
		return nil, errors.New("provenance: the peer's chain is malformed")
	}
	last := doc.Links[len(doc.Links)-1]
	var l Link
	if err := identity.Decode(last, &l); err != nil {
		return nil, fmt.Errorf("provenance: the peer's last link: %w", err)
	}
	p.Head = "sha256:" + hexSHA256(mustCanonical(last))
	p.HeadSigs = l.Signatures
	return p, nil
}
