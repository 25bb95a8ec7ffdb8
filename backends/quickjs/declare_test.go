package quickjs

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

// TestDeclareIsWhatTheBackendReports: Declare, computed without building,
// is the Capabilities of a backend built with the same options, for the
// options the declaration depends on.
func TestDeclareIsWhatTheBackendReports(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name string
		opts *Options
		cpu  bool
		wc   spi.WallClock
	}{
		{"defaults", nil, false, spi.WallClockHard},
		{"fuel", &Options{Mode: ModeFresh, Fuel: 1_000_000}, true, spi.WallClockHard},
		{"no stop check", &Options{Mode: ModeFresh, StopCheck: &off}, false, spi.WallClockSoft},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := Declare(tc.opts)
			assert.Equal(t, newBackend(t, tc.opts).Capabilities(), caps)
			assert.Equal(t, tc.cpu, caps.CPU)
			assert.Equal(t, tc.wc, caps.WallClock)
		})
	}
}
