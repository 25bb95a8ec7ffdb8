//go:build linux

package python

import (
	"fmt"
	"os"

	"github.com/sandbank/sandbank/internal/userns"
)

// Available reports, without starting anything, whether New(opts) may
// succeed on this machine: bubblewrap and an interpreter are installed and
// the kernel allows user namespaces. A nil error is no promise (New runs
// a script in the sandbox to be sure); an error names what is missing.
// Package builtin registers the engine only when it is nil.
func Available(opts *Options) error {
	var o Options
	if opts != nil {
		o = *opts
	}
	if _, _, err := tools(o); err != nil {
		return err
	}
	if err := userns.Check(os.Geteuid() != 0); err != nil {
		return fmt.Errorf("python: %w", err)
	}
	return nil
}
