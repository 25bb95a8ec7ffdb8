package registry

import (
	"errors"
	"fmt"

	"github.com/sandbank/sandbank/spi"
)

// Requirements say what a flow needs from an engine. The zero value
// requires nothing.
type Requirements struct {
	// Network is the most open network the flow accepts: zero accepts any;
	// otherwise the engine's declaration must be at most this open, in the
	// order none < allowlist < open.
	Network spi.Network
	// WallClock is the wall-clock enforcement the flow needs: zero or
	// spi.WallClockSoft accept any; spi.WallClockHard requires hard.
	WallClock spi.WallClock
	// Memory requires an enforced memory limit.
	Memory bool
	// CPU requires an enforced CPU budget.
	CPU bool
	// FreshPerRun requires that no state survives from one run to the next.
	FreshPerRun bool
}

// Validate reports an error when Network or WallClock is neither zero nor a
// value of its closed set.
func (q Requirements) Validate() error {
	var errs []error
	if q.Network != 0 && !q.Network.Valid() {
		errs = append(errs, fmt.Errorf("registry: invalid requirements: network value %d", int(q.Network)))
	}
	if q.WallClock != 0 && !q.WallClock.Valid() {
		errs = append(errs, fmt.Errorf("registry: invalid requirements: wall clock value %d", int(q.WallClock)))
	}
	return errors.Join(errs...)
}

// Shortfalls lists, in a fixed order, each requirement that c does not
// meet, worded to follow "lacks" ("memory", "hard wall clock", …); none when
// c meets them all. It assumes q is valid (see Validate).
func (q Requirements) Shortfalls(c spi.Capabilities) []string {
	var out []string
	if q.Memory && !c.Memory {
		out = append(out, "memory")
	}
	if q.WallClock == spi.WallClockHard && c.WallClock != spi.WallClockHard {
		out = append(out, "hard wall clock")
	}
	if q.CPU && !c.CPU {
		out = append(out, "cpu")
	}
	if q.FreshPerRun && !c.FreshPerRun {
		out = append(out, "fresh per run")
	}
	if q.Network != 0 && c.Network > q.Network {
		want := "network none"
		if q.Network == spi.NetworkAllowlist {
			want = "network allowlist or none"
		}
		out = append(out, fmt.Sprintf("%s (declares %s)", want, c.Network))
	}
	return out
}
