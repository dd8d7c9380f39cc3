package host

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/skillhost/skillhost/host/internal/identity"
	"github.com/skillhost/skillhost/host/internal/provenance"
)

// Verification is the outcome of VerifyTask: whether the chain verifies,
// and otherwise the first link that does not.
type Verification struct {
	TaskID  string   `json:"task_id"`
	Valid   bool     `json:"valid"`
	Links   int      `json:"links"`
	Head    string   `json:"head,omitempty"`    // hash of the last link
	Signers []string `json:"signers,omitempty"` // key ids whose signatures verified
	// Failure names the first link that does not verify (Link -1: the
	// chain as a whole), the field and why.
	Failure *VerificationFailure `json:"failure,omitempty"`
}

// VerificationFailure is where and why a chain does not verify.
type VerificationFailure struct {
	Link    int    `json:"link"`
	Subject string `json:"subject,omitempty"`
	Field   string `json:"field,omitempty"`
	Reason  string `json:"reason"`
}

// Message is one line saying what failed ("" when valid).
func (v Verification) Message() string {
	if v.Valid || v.Failure == nil {
		return ""
	}
	r := provenance.Report{Failure: &provenance.Failure{Link: v.Failure.Link, Subject: v.Failure.Subject, Field: v.Failure.Field, Reason: v.Failure.Reason}}
	return r.Err().Error()
}

// VerifyKeys are the keys a task's provenance must be signed with: PEM
// public (or private) key files, and/or a JWKS document.
type VerifyKeys struct {
	PubFiles []string
	JWKS     []byte
}

// VerifyTask verifies the provenance chain of an A2A task against keys.
// doc is the task's v1.0 JSON as GetTask returns it; a JSON-RPC response
// ({"result": task}) or a SendMessage result ({"task": task}) is accepted
// too. An error means doc or the keys could not be read; a chain that does
// not verify is a Verification with Valid false.
func VerifyTask(doc []byte, keys VerifyKeys) (Verification, error) {
	task, err := unwrapTask(doc)
	if err != nil {
		return Verification{}, err
	}
	var pubs []*identity.PublicKey
	for _, f := range keys.PubFiles {
		k, err := identity.LoadPublicFile(f)
		if err != nil {
			return Verification{}, err
		}
		pubs = append(pubs, k)
	}
	if len(keys.JWKS) > 0 {
		set, err := identity.ParseJWKS(keys.JWKS)
		if err != nil {
			return Verification{}, err
		}
		pubs = append(pubs, set.Keys()...)
	}
	if len(pubs) == 0 {
		return Verification{}, errors.New("no keys to verify with")
	}
	rep := provenance.VerifyTask(task, identity.NewKeySet(pubs...))
	var id struct {
		ID string `json:"id"`
	}
	_ = identity.Decode(task, &id)
	out := Verification{TaskID: id.ID, Valid: rep.Valid, Links: rep.Links, Head: rep.Head, Signers: rep.Signers}
	if f := rep.Failure; f != nil {
		out.Failure = &VerificationFailure{Link: f.Link, Subject: f.Subject, Field: f.Field, Reason: f.Reason}
	}
	return out, nil
}

// unwrapTask finds the task in doc: a task, {"task": …} or {"result": …}.
func unwrapTask(doc []byte) ([]byte, error) {
	for range 3 {
		var m map[string]json.RawMessage
		if err := identity.Decode(doc, &m); err != nil {
			return nil, fmt.Errorf("not a JSON object: %w", err)
		}
		if _, ok := m["id"]; ok {
			if _, isRPC := m["jsonrpc"]; !isRPC {
				return doc, nil
			}
		}
		switch {
		case m["result"] != nil:
			doc = m["result"]
		case m["task"] != nil:
			doc = m["task"]
		default:
			return nil, errors.New("no task found (want a task, {\"task\": …} or a JSON-RPC response)")
		}
	}
	return nil, errors.New("no task found")
}
