package pool

import (
	"fmt"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// The limits policy of every door. A ceiling is the most a run may ask
// for: the server's (or worker's, or command's) limits, with the effect's
// defaults for zero fields (Pool.Ceiling), lowered by a tenant's own
// (Lower). A request's limits are checked against it by Clamp:
//
//   - a zero field asks for the ceiling's;
//   - a negative field is refused;
//   - a field above the ceiling is refused, not cut down: a caller that
//     asked for more time or memory than it may have hears so, rather
//     than getting a run that stops earlier than it asked.
//
// Each door keeps its own wire names (wallClockMs, timeoutMs, a
// duration) and translates a *LimitError into them.

// Ceiling returns the pool's ceiling: its effect options' Limits, with
// effect.DefaultWallClock and effect.DefaultMemoryBytes for zero fields.
func (p *Pool) Ceiling() spi.Limits {
	c := p.opts.Limits
	if c.WallClock == 0 {
		c.WallClock = effect.DefaultWallClock
	}
	if c.MemoryBytes == 0 {
		c.MemoryBytes = effect.DefaultMemoryBytes
	}
	return c
}

// Lower returns ceiling lowered by the positive fields of by that are below
// it: a zero field of by, or one above ceiling, leaves ceiling's.
func Lower(ceiling, by spi.Limits) spi.Limits {
	if by.WallClock > 0 && by.WallClock < ceiling.WallClock {
		ceiling.WallClock = by.WallClock
	}
	if by.MemoryBytes > 0 && by.MemoryBytes < ceiling.MemoryBytes {
		ceiling.MemoryBytes = by.MemoryBytes
	}
	return ceiling
}

// Clamp returns the limits a request asking for asked runs with under
// ceiling: each zero field of asked is ceiling's. A negative field, or one
// above ceiling, is refused with a *LimitError (which matches
// effect.ErrInvalidLimits, and so effect.ErrInvalidCall).
func Clamp(ceiling, asked spi.Limits) (spi.Limits, error) {
	out := ceiling
	switch {
	case asked.WallClock < 0:
		return spi.Limits{}, &LimitError{Kind: record.LimitWallClock, Asked: int64(asked.WallClock), Ceiling: int64(ceiling.WallClock)}
	case asked.MemoryBytes < 0:
		return spi.Limits{}, &LimitError{Kind: record.LimitMemory, Asked: asked.MemoryBytes, Ceiling: ceiling.MemoryBytes}
	case asked.WallClock > ceiling.WallClock:
		return spi.Limits{}, &LimitError{Kind: record.LimitWallClock, Asked: int64(asked.WallClock), Ceiling: int64(ceiling.WallClock)}
	case asked.MemoryBytes > ceiling.MemoryBytes:
		return spi.Limits{}, &LimitError{Kind: record.LimitMemory, Asked: asked.MemoryBytes, Ceiling: ceiling.MemoryBytes}
	}
	if asked.WallClock > 0 {
		out.WallClock = asked.WallClock
	}
	if asked.MemoryBytes > 0 {
		out.MemoryBytes = asked.MemoryBytes
	}
	return out, nil
}

// LimitError is Clamp's refusal of one limit: negative (Asked < 0) or
// above the ceiling. It matches effect.ErrInvalidLimits.
type LimitError struct {
	// Kind is record.LimitWallClock or record.LimitMemory.
	Kind record.LimitKind
	// Asked and Ceiling are the limit asked for and the ceiling's, in
	// nanoseconds for the wall clock and bytes for memory.
	Asked, Ceiling int64
}

// Negative reports whether the limit asked for is negative.
func (e *LimitError) Negative() bool { return e.Asked < 0 }

func (e *LimitError) Error() string {
	if e.Negative() {
		return fmt.Sprintf("pool: negative %s limit", e.Kind)
	}
	if e.Kind == record.LimitWallClock {
		return fmt.Sprintf("pool: %s limit %s is above the ceiling of %s", e.Kind, time.Duration(e.Asked), time.Duration(e.Ceiling))
	}
	return fmt.Sprintf("pool: %s limit %d bytes is above the ceiling of %d bytes", e.Kind, e.Asked, e.Ceiling)
}

// Unwrap returns effect.ErrInvalidLimits.
func (e *LimitError) Unwrap() error { return effect.ErrInvalidLimits }
