package effect

import (
	"crypto/sha256"

	"github.com/sandbank/sandbank/record"
)

// addressPrefix starts every content address.
const addressPrefix = "sha256:"

// errMalformedAddress is the fixed error of ParseAddress. The text it was
// given is not echoed: an address field may hold anything. It matches
// ErrInvalidAddress (and so ErrInvalidCall).
var errMalformedAddress = invalid(ErrInvalidAddress, `effect: malformed script address (want "sha256:" and 64 lower-case hex digits)`)

// ParseAddress checks that s is a well-formed content address: "sha256:"
// followed by exactly 64 lower-case hex digits. Upper-case digits are
// refused, so that one script has exactly one address. The error matches
// ErrInvalidAddress.
func ParseAddress(s string) (record.Address, error) {
	if len(s) != len(addressPrefix)+2*sha256.Size || s[:len(addressPrefix)] != addressPrefix {
		return "", errMalformedAddress
	}
	for i := len(addressPrefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", errMalformedAddress
		}
	}
	return record.Address(s), nil
}

// addressMatches reports whether b hashes to the well-formed address a.
func addressMatches(a record.Address, b []byte) bool { return record.AddressOf(b) == a }
