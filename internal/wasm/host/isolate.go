package host

import (
	"time"

	"github.com/tetratelabs/wazero"
)

// FakeEpoch is what a guest's wall clock reads at its first reading under
// [Isolate]: 2000-01-01T00:00:00Z, far from any host time.
const FakeEpoch = int64(946684800) * int64(time.Second)

// Isolate returns cfg with the guest's view of the host replaced by
// deterministic stand-ins, fresh for every call: a wall clock starting at
// FakeEpoch and a monotonic clock starting at zero, each advancing one
// millisecond per reading; sleeping and yielding return at once; and
// randomness from a fixed seed. It sets no arguments, no environment, no
// filesystem and no streams (a wazero.ModuleConfig has none by default).
func Isolate(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return NewReplay().Configure(cfg)
}
