package effect

import (
	"crypto/sha256"
	"encoding/hex"
)

// Address is a script's content address, "sha256:" followed by 64
// lower-case hex digits.
type Address string

// addressPrefix starts every content address.
const addressPrefix = "sha256:"

// errMalformedAddress is the fixed error of ParseAddress. The text it was
// given is not echoed: an address field may hold anything. It matches
// ErrInvalidAddress (and so ErrInvalidCall).
var errMalformedAddress = invalid(ErrInvalidAddress, `effect: malformed script address (want "sha256:" and 64 lower-case hex digits)`)

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

// ParseAddress checks that s is a well-formed content address: "sha256:"
// followed by exactly 64 lower-case hex digits. Upper-case digits are
// refused, so that one script has exactly one address. The error matches
// ErrInvalidAddress.
func ParseAddress(s string) (Address, error) {
	if len(s) != len(addressPrefix)+2*sha256.Size || s[:len(addressPrefix)] != addressPrefix {
		return "", errMalformedAddress
	}
	for i := len(addressPrefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", errMalformedAddress
		}
	}
	return Address(s), nil
}

// digest returns the hex digest of a well-formed address.
func (a Address) digest() string { return string(a[len(addressPrefix):]) }

// matches reports whether b hashes to the well-formed address a.
func (a Address) matches(b []byte) bool {
	var want [sha256.Size]byte
	if _, err := hex.Decode(want[:], []byte(a.digest())); err != nil {
		return false
	}
	return sha256.Sum256(b) == want
}
