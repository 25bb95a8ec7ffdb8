package run

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOptionsSettings: the zero options mean the defaults, a set
// allowance is the whole allowance, and each invalid option is refused
// with the engine's name first.
func TestOptionsSettings(t *testing.T) {
	s, err := Options{}.Settings("x")
	require.NoError(t, err)
	assert.Equal(t, Settings{
		ColdStart:      ColdStart{Base: DefaultColdStartAllowance, PerMiB: DefaultColdStartPerInputMiB},
		MaxStderrBytes: DefaultMaxStderrBytes,
	}, s)

	s, err = Options{CacheDir: "/c", ColdStartAllowance: time.Second, MaxStderrBytes: 7}.Settings("x")
	require.NoError(t, err)
	assert.Equal(t, Settings{CacheDir: "/c", ColdStart: ColdStart{Base: time.Second}, MaxStderrBytes: 7}, s)

	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{CacheDir: "/c", NoCache: true}, "x: CacheDir and NoCache cannot be used together"},
		{Options{ColdStartAllowance: -1}, "x: negative ColdStartAllowance"},
		{Options{MaxStderrBytes: -1}, "x: negative MaxStderrBytes"},
	} {
		_, err := c.o.Settings("x")
		assert.EqualError(t, err, c.want)
	}
}
