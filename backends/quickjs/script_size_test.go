package quickjs

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

// TestScriptThatDoesNotFitIsTheMemoryLimit: a script too large for the
// engine's memory while it is read (12 MB of comment under the default
// 32 MiB) is the memory limit, not InputTooLarge: the input (null) fitted
// (issue 15). The same script with room to spare runs.
func TestScriptThatDoesNotFitIsTheMemoryLimit(t *testing.T) {
	script := "/*" + strings.Repeat("a", 12<<20) + "*/ 1"
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			b := newBackend(t, &Options{Mode: mode, ColdStartAllowance: 10 * time.Minute})
			assert.Equal(t, spi.Limited(spi.LimitMemory), eval(t, b, script, "null", spi.Limits{}))
			assert.Equal(t, spi.OK([]byte("1")), eval(t, b, script, "null", spi.Limits{MemoryBytes: 256 << 20}))
		})
	}
}
