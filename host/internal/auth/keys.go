package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// KeySpec is one entry of auth.keys as configured.
type KeySpec struct {
	ID     string   // shown in logs and audit lines; the owner of what the key creates
	SHA256 string   // hex SHA-256 of the key (the key itself is never stored)
	Scopes []string // "*", "skill:<glob>", "agent:<glob>", "method:<glob>"
	Rate   string   // optional "N/s|m|h"; "" takes Limits.Rate
}

// Limits are the per-principal caps of every API key (and the session
// tokens it obtains). Zero fields are unlimited.
type Limits struct {
	// Rate caps the JSON-RPC calls of a key (each batch element counts).
	Rate Rate
	// SessionRate caps the sessions a key creates.
	SessionRate Rate
	// MaxOpenSessions caps the sessions a key holds open at once.
	MaxOpenSessions int
	// MaxConcurrentCalls caps a key's calls (and A2A tasks) running at once
	// on one host.
	MaxConcurrentCalls int
	// MaxContextBytes caps the context bytes stored by all of a key's open
	// sessions together.
	MaxContextBytes int64
}

var validKeyID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// key is one configured key, ready to compare.
type key struct {
	digest    [sha256.Size]byte
	principal Principal
}

// KeySet is the configured API keys. It is immutable and safe for
// concurrent use.
type KeySet struct {
	keys []key
	byID map[string]int
}

// NewKeySet validates specs (ids unique and sane, digests 64 hex digits and
// unique, at least one valid scope each, rates well-formed) and returns the
// set. Every problem is reported, each naming its entry.
func NewKeySet(specs []KeySpec, limits Limits) (*KeySet, error) {
	ks := &KeySet{byID: map[string]int{}}
	var errs []error
	digests := map[[sha256.Size]byte]string{}
	for i, s := range specs {
		where := fmt.Sprintf("auth.keys[%d]", i)
		if !validKeyID.MatchString(s.ID) {
			errs = append(errs, fmt.Errorf("%s.id %q: 1..64 characters of A-Z a-z 0-9 _ . - (starting with a letter or digit)", where, clip(s.ID)))
		} else if _, dup := ks.byID[s.ID]; dup {
			errs = append(errs, fmt.Errorf("%s.id %q: used twice", where, s.ID))
		}
		var d [sha256.Size]byte
		raw, err := hex.DecodeString(strings.ToLower(strings.TrimSpace(s.SHA256)))
		if err != nil || len(raw) != sha256.Size {
			errs = append(errs, fmt.Errorf("%s.sha256: want the 64 hex digits of the key's SHA-256 (printf %%s \"$KEY\" | sha256sum)", where))
		} else {
			copy(d[:], raw)
			if other, dup := digests[d]; dup {
				errs = append(errs, fmt.Errorf("%s.sha256: the same key as %q", where, other))
			}
			digests[d] = s.ID
		}
		var scopes []Scope
		for j, raw := range s.Scopes {
			sc, err := ParseScope(raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.scopes[%d]: %w", where, j, err))
				continue
			}
			scopes = append(scopes, sc)
		}
		if len(s.Scopes) == 0 {
			errs = append(errs, fmt.Errorf("%s.scopes: at least one scope is required (\"*\" grants everything)", where))
		}
		lim := limits
		if s.Rate != "" {
			r, err := ParseRate(s.Rate)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.rate: %w", where, err))
			}
			lim.Rate = r
		}
		ks.byID[s.ID] = len(ks.keys)
		ks.keys = append(ks.keys, key{digest: d, principal: keyPrincipal(s.ID, scopes, lim)})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ks, nil
}

// Len is the number of keys; 0 means authentication is off.
func (ks *KeySet) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.keys)
}

// lookup compares the SHA-256 of credential with every key's digest in
// constant time (every key is compared, whatever matches), so the time
// taken does not tell whether or which key matched.
func (ks *KeySet) lookup(credential string) (Principal, bool) {
	sum := sha256.Sum256([]byte(credential))
	found := -1
	for i := range ks.keys {
		eq := subtle.ConstantTimeCompare(sum[:], ks.keys[i].digest[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return Principal{}, false
	}
	return ks.keys[found].principal, true
}

// Principal returns the principal of the key with id, for work done later
// on a key's behalf (a plan step, a task); false when the key is no longer
// configured.
func (ks *KeySet) Principal(id string) (Principal, bool) {
	if ks == nil {
		return Principal{}, false
	}
	i, ok := ks.byID[id]
	if !ok {
		return Principal{}, false
	}
	return ks.keys[i].principal, true
}

// PrincipalOf returns the principal that owns owner (a Principal.Owner
// value): the key's principal for "key:<id>", the local principal for
// local owners. False when the owner's key is no longer configured.
func (ks *KeySet) PrincipalOf(owner string) (Principal, bool) {
	if id, ok := strings.CutPrefix(owner, ownerKeyPrefix); ok {
		return ks.Principal(id)
	}
	if name, ok := strings.CutPrefix(owner, ownerLocalPrefix); ok {
		return Local(name), true
	}
	if owner == "" {
		return Local(""), true
	}
	return Principal{}, false
}

// Digest returns the hex SHA-256 of key, the form auth.keys[].sha256 takes.
func Digest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
