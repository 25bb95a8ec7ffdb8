package record

import (
	"crypto/sha256"
	"encoding/hex"
)

// Address is a script's content address, "sha256:" followed by 64
// lower-case hex digits. effect.ParseAddress checks text that claims to
// be one.
type Address string

// addressPrefix starts every content address.
const addressPrefix = "sha256:"

// AddressOf returns the content address of b: "sha256:" followed by the
// lower-case hex SHA-256 digest of b.
func AddressOf(b []byte) Address {
	sum := sha256.Sum256(b)
	return addressOfSum(sum)
}

func addressOfSum(sum [sha256.Size]byte) Address {
	var buf [len(addressPrefix) + 2*sha256.Size]byte
	copy(buf[:], addressPrefix)
	hex.Encode(buf[len(addressPrefix):], sum[:])
	return Address(buf[:])
}
