//go:build linux

package python

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/effect"
)

// TestMachineCheckedOncePerProcess: a second New with the same
// interpreter, bubblewrap and packages directory runs neither the probe
// nor the self-test again.
func TestMachineCheckedOncePerProcess(t *testing.T) {
	backendOrSkip(t)
	before := machineRuns.Load()
	for _, o := range []*Options{nil, {CPUTime: time.Second}, {Seed: 7}} {
		_, err := New(o)
		assert.NoError(t, err)
	}
	assert.Equal(t, before, machineRuns.Load(), "probes and self-tests run by New after the first")
}

// TestErrorTextBoundCoversTheEffects: the runner cuts a thrown error's
// message at maxErrorTextBytes of UTF-8, which holds more than the
// effect's MaxTextUnits UTF-16 units whatever the characters (at most
// three bytes of UTF-8 per unit), so the effect still sees a message past
// its bound and marks the cut.
func TestErrorTextBoundCoversTheEffects(t *testing.T) {
	assert.Greater(t, maxErrorTextBytes, 3*effect.MaxTextUnits, "maxErrorTextBytes must hold more than effect.MaxTextUnits units of any text")
}
