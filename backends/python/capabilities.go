//go:build linux

package python

import "github.com/sandbank/sandbank/spi"

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }

var _ spi.HostObjectDeclarer = (*Backend)(nil)

// HostObjects implements spi.HostObjectDeclarer: the names a script gets
// beyond Python's builtins and its input, host (host.NAME(args) calls a
// host function) and HostError (what a failing host call raises).
func (b *Backend) HostObjects() []string {
	return []string{"host", "host.*", "HostError", "HostError.*"}
}
