package extism

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/spi"
)

// TestDeclareIsWhatTheBackendReports: Declare, computed without building,
// is the Capabilities of a backend built with the same options; the
// network follows AllowedHosts.
func TestDeclareIsWhatTheBackendReports(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    *Options
		network spi.Network
	}{
		{"defaults", nil, spi.NetworkNone},
		{"allowed hosts", &Options{AllowedHosts: []string{"example.com"}}, spi.NetworkAllowlist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caps := Declare(tc.opts)
			assert.Equal(t, newTestBackend(t, tc.opts).Capabilities(), caps)
			assert.Equal(t, tc.network, caps.Network)
		})
	}
}
