//go:build !linux

package starlarknative

import (
	"context"
	"errors"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// Options configure the backend; on this system New refuses whatever
// they hold.
type Options struct {
	MaxSteps, MaxResultBytes int64
	ColdStartAllowance       time.Duration
	Spares                   int
}

// Backend is never built on this system.
type Backend struct{}

var errNotLinux = errors.New("starlarknative: the engine's child confines itself with Linux namespaces, seccomp and Landlock")

// New refuses: the engine needs Linux.
func New(*Options) (*Backend, error) { return nil, errNotLinux }

// Available reports that the engine needs Linux.
func Available() error { return errNotLinux }

// KernelBounds reports that runs get no cgroup: the engine needs Linux.
func KernelBounds() error { return errNotLinux }

// Capabilities implements spi.Backend.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }

// Evaluate implements spi.Backend; it is never reached.
func (b *Backend) Evaluate(context.Context, spi.Request) (spi.Outcome, error) {
	return spi.Outcome{}, errNotLinux
}

// Close implements spi.Backend.
func (b *Backend) Close() error { return nil }
