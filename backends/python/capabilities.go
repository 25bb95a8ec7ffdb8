//go:build linux

package python

import "github.com/sandbank/sandbank/spi"

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }
