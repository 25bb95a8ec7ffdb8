package jsguest

import (
	"math"
	"strings"

	"github.com/sandbank/sandbank/internal/jsfront"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
)

// Payload returns what the host writes to the guest's stdin for one run
// (wasmguest.SizedPayload: the guest reads exactly the input, so stdin
// stays open for host-call replies, and host says whether the wrapper
// gives the script its global host). Invalid UTF-8 in the script is replaced by U+FFFD,
// and the script goes through the JavaScript front end (jsfront.Prepare:
// a script with top-level await runs as an async function; every other
// script is unchanged).
func Payload(n wasmguest.Nonce, script []byte, input []byte, host bool) []byte {
	src, _ := jsfront.Prepare([]byte(strings.ToValidUTF8(string(script), "\uFFFD")))
	return wasmguest.SizedPayload(n, src, input, host)
}

// StdoutLimit bounds the stdout kept for a run whose memory limit is
// memoryBytes. Only the wrapper writes to stdout, and its result is a
// string held in guest memory, at most three bytes of UTF-8 per UTF-16
// unit of it.
func StdoutLimit(memoryBytes int64) int {
	return int(min(3*memoryBytes+64<<10, math.MaxInt32))
}
