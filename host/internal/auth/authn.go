package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/skillhost/skillhost/host/fault"
)

// TokenPrefix starts every session token: "skt_" + base64url(session id) +
// "." + 43 characters of base64url randomness (256 bits).
const TokenPrefix = "skt_"

// MaxCredentialBytes bounds a presented credential; longer ones are refused
// without hashing.
const MaxCredentialBytes = 512

var tokenEnc = base64.RawURLEncoding

// NewToken returns a fresh session token for sessionID and the hex SHA-256
// to store with the session (the token itself is never stored).
func NewToken(sessionID string) (token, digest string) {
	var secret [32]byte
	_, _ = rand.Read(secret[:]) // crypto/rand.Read never fails (Go 1.24+)
	token = TokenPrefix + tokenEnc.EncodeToString([]byte(sessionID)) + "." + tokenEnc.EncodeToString(secret[:])
	return token, Digest(token)
}

// tokenSession returns the session id a token names.
func tokenSession(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok {
		return "", false
	}
	enc, _, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	id, err := tokenEnc.DecodeString(enc)
	if err != nil || len(id) == 0 {
		return "", false
	}
	return string(id), true
}

// TokenRecord is what the session store keeps about a session's token.
type TokenRecord struct {
	Owner  string // Principal.Owner of the session's creator
	SHA256 string // hex digest of the token; "" when none was issued
	Active bool   // false once the session is closed (the token is revoked)
}

// TokenStore reads a session's token record. A missing session is an error
// (any error refuses the token).
type TokenStore interface {
	SessionToken(ctx context.Context, sessionID string) (TokenRecord, error)
}

// Authenticator turns a presented credential (an API key or a session
// token) into a Principal. Safe for concurrent use.
type Authenticator struct {
	keys   *KeySet
	tokens TokenStore
}

// NewAuthenticator returns an Authenticator over keys; tokens may be nil
// (session tokens are then refused).
func NewAuthenticator(keys *KeySet, tokens TokenStore) *Authenticator {
	return &Authenticator{keys: keys, tokens: tokens}
}

// Enabled reports whether API keys are configured. Without keys HTTP serves
// loopback clients only, as the local principal.
func (a *Authenticator) Enabled() bool { return a != nil && a.keys.Len() > 0 }

// Keys is the key set.
func (a *Authenticator) Keys() *KeySet { return a.keys }

// Authenticate returns the principal of credential. An empty credential is
// Unauthorized (unauthenticated); one matching no key and no live session
// token is Unauthorized (invalid_credentials); the token of a closed
// session is Unauthorized (token_revoked).
func (a *Authenticator) Authenticate(ctx context.Context, credential string) (Principal, error) {
	if credential == "" {
		return Principal{}, fault.New(fault.Unauthorized, fault.ReasonUnauthenticated,
			"credentials required: send an API key as \"Authorization: Bearer <key>\" or \"X-API-Key: <key>\"")
	}
	invalid := fault.New(fault.Unauthorized, fault.ReasonInvalidCredentials, "the API key or session token is not valid")
	if len(credential) > MaxCredentialBytes || !a.Enabled() {
		return Principal{}, invalid
	}
	if p, ok := a.keys.lookup(credential); ok {
		return p, nil
	}
	sessionID, ok := tokenSession(credential)
	if !ok || a.tokens == nil {
		return Principal{}, invalid
	}
	rec, err := a.tokens.SessionToken(ctx, sessionID)
	var fe *fault.Error
	if err != nil && (!errors.As(err, &fe) || fe.Kind == fault.Internal) {
		return Principal{}, err // the store failed: not the client's fault
	}
	if err != nil || rec.SHA256 == "" {
		return Principal{}, invalid
	}
	want, derr := hex.DecodeString(rec.SHA256)
	got := sha256.Sum256([]byte(credential))
	if derr != nil || subtle.ConstantTimeCompare(want, got[:]) != 1 {
		return Principal{}, invalid
	}
	if !rec.Active {
		return Principal{}, fault.New(fault.Unauthorized, fault.ReasonTokenRevoked, "the session token was revoked: its session is closed")
	}
	owner, ok := a.keys.PrincipalOf(rec.Owner)
	if !ok || owner.kind != KindKey {
		return Principal{}, invalid // the key that created the session is gone
	}
	owner.kind, owner.session = KindToken, sessionID
	return owner, nil
}

// Credential picks the credential of a request from its Authorization and
// X-API-Key header values (each "" when absent; authorizations holds every
// Authorization header). The Bearer scheme is matched case-insensitively.
// Two different credentials, a repeated Authorization header or another
// scheme are Unauthorized: a request names exactly one caller.
func Credential(authorizations []string, apiKey string) (string, error) {
	bad := func(msg string) error { return fault.New(fault.Unauthorized, fault.ReasonInvalidCredentials, msg) }
	if len(authorizations) > 1 {
		return "", bad("more than one Authorization header")
	}
	var bearer string
	if len(authorizations) == 1 {
		scheme, rest, ok := strings.Cut(strings.TrimSpace(authorizations[0]), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "", bad("the Authorization header must use the Bearer scheme")
		}
		bearer = strings.TrimSpace(rest)
		if bearer == "" {
			return "", bad("the Authorization header carries no credential")
		}
	}
	apiKey = strings.TrimSpace(apiKey)
	if bearer != "" && apiKey != "" && subtle.ConstantTimeCompare([]byte(bearer), []byte(apiKey)) != 1 {
		return "", bad("Authorization and X-API-Key carry different credentials")
	}
	if bearer != "" {
		return bearer, nil
	}
	return apiKey, nil
}
