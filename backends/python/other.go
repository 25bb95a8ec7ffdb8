//go:build !linux

package python

import (
	"context"
	"errors"

	"github.com/sandbank/sandbank/spi"
)

// Backend is never built on this system.
type Backend struct{}

var errNotLinux = errors.New("python: the backend's sandbox needs Linux (namespaces, seccomp)")

// New refuses: the sandbox needs Linux.
func New(*Options) (*Backend, error) { return nil, errNotLinux }

// Available reports that the sandbox needs Linux.
func Available(*Options) error { return errNotLinux }

// Capabilities implements spi.Backend.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }

// Evaluate implements spi.Backend; it is never reached.
func (b *Backend) Evaluate(context.Context, spi.Request) (spi.Outcome, error) {
	return spi.Outcome{}, errNotLinux
}

// Warm implements spi.Warmer; it is never reached.
func (b *Backend) Warm(context.Context) error { return errNotLinux }

// Version is never reached.
func (b *Backend) Version(context.Context) (string, error) { return "", errNotLinux }

// ZygoteStatus is never reached.
func (b *Backend) ZygoteStatus(context.Context) error { return errNotLinux }

// Close implements io.Closer; it is never reached.
func (b *Backend) Close() error { return nil }
