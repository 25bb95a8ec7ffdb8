package guest

import (
	"strings"

	"github.com/sandbank/sandbank/internal/jsfront"
	"github.com/sandbank/sandbank/internal/wasmguest"
)

// Nonce is a per-run secret that every framed record carries (see
// wasmguest.Nonce).
type Nonce = wasmguest.Nonce

// NewNonce returns 128 random bits as 32 hex digits.
func NewNonce() (Nonce, error) { return wasmguest.NewNonce() }

// Payload returns what the host writes to the guest's stdin for one run
// (wasmguest.Payload). Invalid UTF-8 in the script is replaced by U+FFFD,
// and the script goes through the JavaScript front end (jsfront.Prepare:
// a script with top-level await runs as an async function; every other
// script is unchanged).
func Payload(n Nonce, script []byte, input []byte) []byte {
	src, _ := jsfront.Prepare([]byte(strings.ToValidUTF8(string(script), "\uFFFD")))
	return wasmguest.Payload(n, src, input)
}

// Stdout is the host's bounded sink for the guest's stdout (see
// wasmguest.Stdout).
type Stdout = wasmguest.Stdout

// NewStdout returns a sink for a run with nonce n that keeps at most limit
// bytes and calls onStart (which may be nil) when the script starts.
func NewStdout(n Nonce, limit int, onStart func()) *Stdout {
	return wasmguest.NewStdout(n, limit, onStart)
}

// Record is the one conclusive record of a run, as read from stdout.
type Record = wasmguest.Record
