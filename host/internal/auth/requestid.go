package auth

import (
	"crypto/rand"
	"encoding/hex"
)

// MaxRequestIDBytes is the longest request id a client may choose.
const MaxRequestIDBytes = 128

// RequestID is the id a transport gives a request whose client sent
// fromClient (its X-Request-ID header or request-id metadata): that id when
// it is 1 to MaxRequestIDBytes printable ASCII characters without spaces,
// else a new one, "req_" and 24 random hex digits.
func RequestID(fromClient string) string {
	if saneRequestID(fromClient) {
		return fromClient
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	var s [len("req_") + 2*len(b)]byte // one allocation: the string
	copy(s[:], "req_")
	hex.Encode(s[len("req_"):], b[:])
	return string(s[:])
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDBytes {
		return false
	}
	for i := range len(id) {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}
