package jsguest

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
)

// TestWrapperNeverAwaits: an async module is awaited by qjs with a loop
// that runs timers between jobs, so a wrapper that awaited would let its
// never-settled timer fire before a long chain of jobs had settled (the
// behaviour is pinned by the quickjs package's "a long chain settles
// before the timer" case; this pins the cause).
func TestWrapperNeverAwaits(t *testing.T) {
	assert.False(t, regexp.MustCompile(`\bawait\b`).MatchString(Wrapper))
	assert.Contains(t, Wrapper, "setTimer(idle, 0)")
}

// TestWrapperLogFraming: the wrapper's log records are the one framing
// wasmguest.Stderr reads.
func TestWrapperLogFraming(t *testing.T) {
	assert.Equal(t, strconv.Itoa(wasmguest.LogLineUnits), logLineUnits)
	assert.Equal(t, string(rune(wasmguest.RecLog)), recLog)
}

// TestWrapperCutsFileNamesAsTheHostExpects: the wrapper sends at most
// wasmguest.MaxFileNameUnits of a name, one past what spi.CheckFileName
// accepts, so a longer name is still refused by the host.
func TestWrapperCutsFileNamesAsTheHostExpects(t *testing.T) {
	assert.Equal(t, strconv.Itoa(wasmguest.MaxFileNameUnits), maxFileNameUnits)
	assert.Contains(t, Wrapper, "name.length > "+maxFileNameUnits)
}
