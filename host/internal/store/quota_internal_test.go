package store

import (
	"fmt"
	"strings"
	"testing"
)

// A full ledger of worst-case entries fits the bound the config checks use.
func TestLedgerEntryMaxBytes(t *testing.T) {
	t.Parallel()
	l := ledger{Keys: map[string]ledgerEntry{}}
	for i := range MaxKeysPerSessionLimit {
		l.Keys[ledgerKey(fmt.Sprint(strings.Repeat("k", MaxContextKeyBytes-8), i))] = ledgerEntry{
			Bytes: MaxValueBytesLimit + MaxContextKeyBytes, Expires: 1 << 40, Token: newToken(),
		}
	}
	data, err := marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if limit := MaxKeysPerSessionLimit * ledgerEntryMaxBytes; len(data) > limit {
		t.Errorf("ledger of %d worst-case entries is %d bytes, over %d", MaxKeysPerSessionLimit, len(data), limit)
	}
}
