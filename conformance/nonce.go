package conformance

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/sandbank/sandbank/fixtures"
)

// newNonce returns a fresh nonce: fixtures.NonceLen lowercase hexadecimal
// digits from crypto/rand. Every script the kit stores and every input of
// a repeated run carries one, so a backend that answers from a cache, from
// another request, or from a table of the fixtures' expected values fails.
func newNonce() string {
	b := make([]byte, fixtures.NonceLen/2)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// nonceInput is the JSON text {"nonce": NONCE} (plus the given fields).
func nonceInput(nonce string, fields map[string]any) []byte {
	m := map[string]any{"nonce": nonce}
	for k, v := range fields {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}
