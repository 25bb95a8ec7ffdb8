package guest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// Nonce is a per-run secret that every framed record carries. The script
// never sees it, so it cannot write a record the host would accept.
type Nonce string

// NewNonce returns 128 random bits as 32 hex digits.
func NewNonce() (Nonce, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("guest: nonce: %w", err)
	}
	return Nonce(hex.EncodeToString(b[:])), nil
}
