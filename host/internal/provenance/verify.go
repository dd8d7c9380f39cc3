package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/skillhost/skillhost/host/internal/identity"
)

// Failure names the first thing that does not verify: the link (its seq,
// -1 for the chain as a whole), the field and why.
type Failure struct {
	Link    int    `json:"link"`
	Subject string `json:"subject,omitempty"`
	Field   string `json:"field,omitempty"`
	Reason  string `json:"reason"`
}

// Report is the outcome of a verification.
type Report struct {
	Valid   bool     `json:"valid"`
	Links   int      `json:"links"`
	Head    string   `json:"head,omitempty"`    // hash of the last link
	Signers []string `json:"signers,omitempty"` // key ids whose signatures verified
	Failure *Failure `json:"failure,omitempty"`
}

// Err is nil for a valid report, else an error naming the failing link.
func (r Report) Err() error {
	if r.Valid {
		return nil
	}
	f := r.Failure
	if f == nil {
		return errors.New("provenance: not verified")
	}
	where := "the chain"
	if f.Link >= 0 {
		where = fmt.Sprintf("link %d", f.Link)
		if f.Subject != "" {
			where += " (" + f.Subject + ")"
		}
	}
	if f.Field != "" {
		where += " field " + f.Field
	}
	return fmt.Errorf("provenance: %s: %s", where, f.Reason)
}

// Expect is what the chain must agree with: the record it is kept with.
type Expect struct {
	// States: each subject's current state, which its last transition must
	// have entered.
	States map[string]string
	// Artifacts: every artifact (or step output) present, by id, with its
	// digest; each must have an artifact link with that digest, and each
	// artifact link must name one of them.
	Artifacts map[string]string
	// Facts the first link must state (where the record still has them).
	Facts map[string]string
}

func fail(r *Report, link int, subject, field, format string, args ...any) Report {
	r.Valid = false
	r.Failure = &Failure{Link: link, Subject: subject, Field: field, Reason: fmt.Sprintf(format, args...)}
	return *r
}

// Verify checks a chain given as its raw JSON ({"links":[…]}) against keys
// and want: every link in order (seq), each link's prev the hash of the one
// before, each link signed by a key of keys (every signature by a known
// key must verify), transitions of a subject continuing where its previous
// one ended, times not going back, and the chain agreeing with want. The
// links are read as raw JSON, so any added, removed or changed byte of a
// link is detected.
func Verify(raw json.RawMessage, keys *identity.KeySet, want Expect) Report {
	r := Report{}
	var doc struct {
		Links []json.RawMessage `json:"links"`
	}
	if err := identity.Decode(raw, &doc); err != nil {
		return fail(&r, -1, "", "", "not a provenance chain: %v", err)
	}
	if len(doc.Links) == 0 {
		return fail(&r, -1, "", "", "the chain is empty")
	}
	if len(doc.Links) > maxLinks {
		return fail(&r, -1, "", "", "%d links, more than %d", len(doc.Links), maxLinks)
	}
	r.Links = len(doc.Links)
	signers := map[string]bool{}
	last := map[string]string{} // subject → state its last transition entered
	seen := map[string]bool{}   // subjects with a transition
	artifacts := map[string]string{}
	prev := ""
	var prevAt string
	var first Link
	for i, lr := range doc.Links {
		var l Link
		if err := strictDecode(lr, &l); err != nil {
			return fail(&r, i, "", "", "malformed link: %v", err)
		}
		if i == 0 {
			first = l
		}
		if l.Seq != i {
			return fail(&r, i, l.Subject, "seq", "seq is %d, want %d (a link was removed, added or moved)", l.Seq, i)
		}
		if l.Prev != prev {
			return fail(&r, i, l.Subject, "prev", "prev does not match the hash of link %d (an earlier link was changed)", i-1)
		}
		kids, err := checkSignatures(lr, keys)
		if err != nil {
			return fail(&r, i, l.Subject, "signatures", "%v", err)
		}
		for _, k := range kids {
			signers[k] = true
		}
		at := l.At.UTC().Format("2006-01-02T15:04:05.000000Z")
		if prevAt != "" && at < prevAt {
			return fail(&r, i, l.Subject, "at", "time goes back (%s before %s)", at, prevAt)
		}
		prevAt = at
		switch l.Kind {
		case KindTransition:
			if seen[l.Subject] && l.From != last[l.Subject] {
				return fail(&r, i, l.Subject, "from", "transition from %q, but the previous one ended in %q", l.From, last[l.Subject])
			}
			if !seen[l.Subject] && l.From != "" && !strings.Contains(l.Subject, "/step:") {
				return fail(&r, i, l.Subject, "from", "first transition of %s is from %q, want creation (\"\")", l.Subject, l.From)
			}
			seen[l.Subject], last[l.Subject] = true, l.To
		case KindArtifact:
			if l.Artifact == nil {
				return fail(&r, i, l.Subject, "artifact", "artifact link without an artifact")
			}
			artifacts[l.Artifact.ID] = l.Artifact.SHA256
		case KindPeer:
			if l.Peer == nil {
				return fail(&r, i, l.Subject, "peer", "peer link without a peer result")
			}
		default:
			return fail(&r, i, l.Subject, "kind", "unknown kind %q", l.Kind)
		}
		sum := sha256.Sum256(mustCanonical(lr))
		prev = "sha256:" + hex.EncodeToString(sum[:])
	}
	r.Head = prev
	for k := range signers {
		r.Signers = append(r.Signers, k)
	}
	sort.Strings(r.Signers)
	for _, subject := range sortedKeys(want.States) {
		if got := last[subject]; got != want.States[subject] {
			return fail(&r, lastLinkOf(doc.Links, subject), subject, "to", "the record's state is %q, the chain ends in %q (the state was changed outside the chain)",
				want.States[subject], got)
		}
	}
	for _, id := range sortedKeys(want.Artifacts) {
		got, ok := artifacts[id]
		if !ok {
			return fail(&r, -1, "", "artifacts", "artifact %s has no signed link", id)
		}
		if got != want.Artifacts[id] {
			return fail(&r, artifactLink(doc.Links, id), "", "artifact.sha256", "artifact %s is not the one signed (its content was changed)", id)
		}
	}
	for _, id := range sortedKeys(artifacts) {
		if _, ok := want.Artifacts[id]; !ok {
			return fail(&r, artifactLink(doc.Links, id), "", "artifact", "signed artifact %s is missing from the record", id)
		}
	}
	for _, k := range sortedKeys(want.Facts) {
		if v, ok := first.Facts[k]; ok && v != want.Facts[k] {
			return fail(&r, 0, first.Subject, "facts."+k, "the record's %s is %q, the chain says %q", k, want.Facts[k], v)
		}
	}
	r.Valid = true
	return r
}

// VerifyLinks checks a fragment of a chain ({"links":[…]}, as a task event
// carries it): each link signed by a key of keys, each link after the first
// naming the hash of the one before it. A failure names the link by its seq.
// The fragment's place in the task's chain is checked by Verify on the
// whole chain (GetTask): its first link's prev is the hash of the link
// before it there.
func VerifyLinks(raw json.RawMessage, keys *identity.KeySet) Report {
	r := Report{}
	var doc struct {
		Links []json.RawMessage `json:"links"`
	}
	if err := identity.Decode(raw, &doc); err != nil || len(doc.Links) == 0 {
		return fail(&r, -1, "", "", "not a provenance fragment with links: %v", err)
	}
	if len(doc.Links) > maxLinks {
		return fail(&r, -1, "", "", "%d links, more than %d", len(doc.Links), maxLinks)
	}
	r.Links = len(doc.Links)
	signers := map[string]bool{}
	prev := ""
	for i, lr := range doc.Links {
		var l Link
		if err := strictDecode(lr, &l); err != nil {
			return fail(&r, -1, "", "", "malformed link %d of the fragment: %v", i, err)
		}
		if i > 0 && l.Prev != prev {
			return fail(&r, l.Seq, l.Subject, "prev", "prev does not match the hash of the link before it")
		}
		kids, err := checkSignatures(lr, keys)
		if err != nil {
			return fail(&r, l.Seq, l.Subject, "signatures", "%v", err)
		}
		for _, k := range kids {
			signers[k] = true
		}
		prev = "sha256:" + hexSHA256(mustCanonical(lr))
	}
	r.Head = prev
	r.Signers = sortedKeys(signers)
	r.Valid = true
	return r
}

// checkSignatures verifies the link's signatures over its JCS form
// without "signatures"; at least one must be by a key of keys, and every
// one by a known key must verify.
func checkSignatures(raw json.RawMessage, keys *identity.KeySet) ([]string, error) {
	var m map[string]json.RawMessage
	if err := identity.Decode(raw, &m); err != nil {
		return nil, err
	}
	var sigs []string
	if err := identity.Decode(m["signatures"], &sigs); err != nil || len(sigs) == 0 {
		return nil, errors.New("the link is not signed")
	}
	delete(m, "signatures")
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	payload, err := identity.Canonical(b)
	if err != nil {
		return nil, err
	}
	var kids []string
	var unknown []string
	for _, s := range sigs {
		sig, err := identity.ParseCompact(s)
		if err != nil {
			return nil, err
		}
		k, err := keys.Verify(payload, sig)
		var uk *identity.UnknownKeyError
		if errors.As(err, &uk) {
			unknown = append(unknown, uk.KeyID)
			continue
		}
		if err != nil {
			return nil, errors.New("signature does not verify (the link was changed after it was signed)")
		}
		kids = append(kids, k.KeyID())
	}
	if len(kids) == 0 {
		return nil, fmt.Errorf("signed only by key(s) %s, none of which is trusted here", strings.Join(unknown, ", "))
	}
	return kids, nil
}

// strictDecode reads a link: strictly (identity.Decode), and every member
// must be a field of Link.
func strictDecode(raw json.RawMessage, v any) error { return identity.DecodeKnown(raw, v) }

func mustCanonical(raw json.RawMessage) []byte {
	b, err := identity.Canonical(raw)
	if err != nil {
		return raw
	}
	return b
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func lastLinkOf(links []json.RawMessage, subject string) int {
	for i := len(links) - 1; i >= 0; i-- {
		var l Link
		if identity.Decode(links[i], &l) == nil && l.Subject == subject && l.Kind == KindTransition {
			return i
		}
	}
	return -1
}

func artifactLink(links []json.RawMessage, id string) int {
	for i, lr := range links {
		var l Link
		if identity.Decode(lr, &l) == nil && l.Artifact != nil && l.Artifact.ID == id {
			return i
		}
	}
	return -1
}

func hexSHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
