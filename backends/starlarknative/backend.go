//go:build linux

package starlarknative

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/internal/cgroup"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// Defaults and bounds of a run's limits.
const (
	// DefaultWallClock is the script's wall clock when the request sets
	// none.
	DefaultWallClock = 5 * time.Second
	// DefaultMemoryBytes is the memory limit when the request sets none
	// (32 MiB, the effect's default).
	DefaultMemoryBytes int64 = 32 << 20
	// MaxMemoryBytes caps a request's memory limit (1 GiB): a larger one
	// is lowered to it.
	MaxMemoryBytes int64 = 1 << 30
	// DefaultColdStartAllowance bounds a run's start-up (a child started
	// when no spare is ready, handing it the script and the input,
	// compiling and converting them) when Options leave it zero: 30 s,
	// far above the milliseconds it takes, so that only a stuck start-up
	// reaches it.
	DefaultColdStartAllowance = 30 * time.Second
	// DefaultColdStartPerMiB is what the allowance grows by per MiB of
	// input.
	DefaultColdStartPerMiB = time.Second
	// DefaultSpares is how many confined children wait ready when
	// Options leave it zero.
	DefaultSpares = 2
)

// ErrClosed is returned (wrapped) by Evaluate and Warm after Close; match
// it with errors.Is.
var ErrClosed = wasmrun.ErrClosed

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// Options configure the backend. The zero value (or a nil *Options) means
// defaults; every field documents its default.
type Options struct {
	// MaxSteps is the step budget of one run, as in the in-process engine
	// (starlark.Options.MaxSteps): a run that exhausts it is reported as
	// the CPU limit. Zero means starlark.DefaultMaxSteps; negative is
	// refused.
	MaxSteps int64
	// MaxResultBytes bounds the result as JSON text while the child
	// encodes it (starlark.Options.MaxResultBytes). Zero means
	// starlark.DefaultMaxResultBytes; negative is refused. The memory
	// limit bounds it too.
	MaxResultBytes int64
	// ColdStartAllowance bounds a run's start-up, before the script's own
	// wall clock starts, plus DefaultColdStartPerMiB per MiB of input: a
	// run that overruns it fails with a *spi.StartupError (untyped, worth
	// retrying). Zero means DefaultColdStartAllowance; negative is
	// refused.
	ColdStartAllowance time.Duration
	// Spares is how many confined children wait ready, started off the
	// request path (one is started for each one a run took, once that run
	// has ended), each for a run it knows nothing of.
	// Zero means DefaultSpares; negative is refused. A run that finds none
	// ready starts its own, so Spares bounds what is kept, never how many
	// runs go side by side.
	Spares int
}

// Backend runs every evaluation in a new confined child process, taken
// from the spares it keeps ready. Build one with [New]; it is safe for
// concurrent use, and [Backend.Close] releases it.
type Backend struct {
	maxSteps, maxResult int64
	img                 *image
	groups              *cgroup.Manager // nil: runs get no cgroup
	spares              *spares
	core                *wasmrun.Engine[*image, facts]
	reaping             sync.WaitGroup // runs' children being reaped

	// observe, nil in production, sees the facts of every run.
	observe func(facts)
}

// New returns a starlark-native backend. A nil opts means defaults; a
// negative option is an error. New fails, saying why, where the engine
// cannot run ([Available]) or its first child cannot confine itself.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxSteps < 0:
		return nil, fmt.Errorf("starlarknative: MaxSteps is %d, want > 0 (or 0 for the default)", o.MaxSteps)
	case o.MaxResultBytes < 0:
		return nil, fmt.Errorf("starlarknative: MaxResultBytes is %d, want > 0 (or 0 for the default)", o.MaxResultBytes)
	case o.ColdStartAllowance < 0:
		return nil, fmt.Errorf("starlarknative: ColdStartAllowance is %v, want > 0 (or 0 for the default)", o.ColdStartAllowance)
	case o.Spares < 0:
		return nil, fmt.Errorf("starlarknative: Spares is %d, want > 0 (or 0 for the default)", o.Spares)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = starlark.DefaultMaxSteps
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = starlark.DefaultMaxResultBytes
	}
	if o.ColdStartAllowance == 0 {
		o.ColdStartAllowance = DefaultColdStartAllowance
	}
	if o.Spares == 0 {
		o.Spares = DefaultSpares
	}
	if err := Available(); err != nil {
		return nil, err
	}
	img, err := childImage()
	if err != nil {
		return nil, err
	}
	b := &Backend{maxSteps: o.MaxSteps, maxResult: o.MaxResultBytes, img: img}
	if KernelBounds() == nil {
		b.groups, _ = cgroup.Default()
	}
	// The first child proves, before New returns, that a child confines
	// itself here; it is the first spare.
	first, err := b.newSpare()
	if err != nil {
		return nil, err
	}
	b.core = wasmrun.New("starlarknative",
		wasmrun.Bounds{DefaultWallClock: DefaultWallClock, DefaultMemoryBytes: DefaultMemoryBytes, MaxMemoryBytes: MaxMemoryBytes},
		wasmrun.ColdStart{Base: o.ColdStartAllowance, PerMiB: DefaultColdStartPerMiB},
		(*childRuntime)(b))
	b.spares = newSpares(b.core.Life(), o.Spares, b.newSpare, first)
	return b, nil
}

// newSpare starts a child and, where runs get cgroups, places it in a
// group bounded for a run of the default memory limit (most runs): a run
// with another limit moves the child to a group of its own.
func (b *Backend) newSpare() (*spare, error) {
	c, err := b.img.start()
	if err != nil {
		return nil, err
	}
	sp := &spare{c: c}
	if b.groups == nil {
		return sp, nil
	}
	if err := sp.place(b.groups, DefaultMemoryBytes); err != nil {
		sp.discard()
		return nil, err
	}
	return sp, nil
}

// Evaluate implements spi.Backend: a confined child per call (a spare,
// or one started for the call), in a cgroup of its own where the host may
// create one, killed when the script's wall clock runs out or ctx is
// done. The outcome is decided from what the host observes: the child's
// exit status, its group's memory events, the host's own timers, and the
// records the child wrote (docs/design.md).
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	return b.core.Evaluate(ctx, req)
}

// Capabilities implements spi.Backend: [Declare]'s declaration, which the
// conformance kit proves.
func (b *Backend) Capabilities() spi.Capabilities { return Declare(nil) }

// Warm waits until the spares are ready (or ctx is done).
func (b *Backend) Warm(ctx context.Context) error {
	return b.core.Warm(ctx, b.spares.warm)
}

// Close stops every run in flight and waits for them to return, and ends
// the spare children. It is idempotent.
func (b *Backend) Close() error {
	return b.core.Close(func() error {
		b.reaping.Wait()
		return b.spares.close()
	})
}
