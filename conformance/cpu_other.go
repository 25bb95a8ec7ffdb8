//go:build !unix

package conformance

import "time"

// processCPU is not available on this platform: the idle check is skipped.
func processCPU() (time.Duration, bool) { return 0, false }
