package run

import (
	"errors"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// Bounds are a runtime's defaults and ceiling for a run's limits.
type Bounds struct {
	// DefaultWallClock is the script's wall clock when a request sets none.
	DefaultWallClock time.Duration
	// DefaultMemoryBytes is the memory limit when a request sets none.
	DefaultMemoryBytes int64
	// MaxMemoryBytes caps a request's memory limit: a larger one is
	// lowered to it.
	MaxMemoryBytes int64
}

// normalise refuses negative limits and fills in the defaults; name
// starts the error's message.
func (b Bounds) normalise(name string, l spi.Limits) (spi.Limits, error) {
	switch {
	case l.WallClock < 0:
		return l, errors.New(name + ": negative wall clock")
	case l.MemoryBytes < 0:
		return l, errors.New(name + ": negative memory limit")
	}
	if l.WallClock == 0 {
		l.WallClock = b.DefaultWallClock
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = b.DefaultMemoryBytes
	}
	l.MemoryBytes = min(l.MemoryBytes, b.MaxMemoryBytes)
	return l, nil
}
