package guest

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/sandbank/sandbank/internal/jsfront"
	"github.com/sandbank/sandbank/internal/wasmguest"
)

// Nonce is a per-run secret that every framed record carries (see
// wasmguest.Nonce).
type Nonce = wasmguest.Nonce

// NewNonce returns 128 random bits as 32 hex digits.
func NewNonce() (Nonce, error) { return wasmguest.NewNonce() }

// Payload returns what the host writes to the guest's stdin for one run:
// the nonce on the first line, the script as a JSON string literal on the
// second, the input's length in bytes on the third (prefixed with "h" when
// the run has host functions: the wrapper then gives the script its global
// host), and the caller's input (JSON text, possibly spanning lines) as
// the rest. The guest reads exactly that many bytes of input, so stdin
// stays open for host-call replies (see wasmguest.Stdin). Invalid UTF-8
// in the script is replaced by U+FFFD, and the script goes through the
// JavaScript front end (jsfront.Prepare: a script with top-level await
// runs as an async function; every other script is unchanged).
func Payload(n Nonce, script []byte, input []byte, host bool) []byte {
	src, _ := jsfront.Prepare([]byte(strings.ToValidUTF8(string(script), "\uFFFD")))
	lit, _ := json.Marshal(string(src)) // a string always marshals
	buf := make([]byte, 0, len(n)+len(lit)+len(input)+24)
	buf = append(buf, n...)
	buf = append(buf, '\n')
	buf = append(buf, lit...)
	buf = append(buf, '\n')
	if host {
		buf = append(buf, 'h')
	}
	buf = strconv.AppendInt(buf, int64(len(input)), 10)
	buf = append(buf, '\n')
	return append(buf, input...)
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
