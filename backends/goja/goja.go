package goja

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sandbank/sandbank/internal/jsfront"
	"github.com/sandbank/sandbank/spi"
)

// Engine is the backend's engine name, as the registry knows it.
const Engine = "goja"

// Language is the script language the backend runs.
const Language = "javascript"

// The defaults of [Options].
const (
	// DefaultMaxCallStackSize is the deepest JavaScript call stack a script
	// may build; one call deeper is a thrown "RangeError".
	DefaultMaxCallStackSize = 2000
	// DefaultMaxNesting is the deepest bracket nesting accepted in JSON
	// text (the input, and every JSON.parse a script makes) and the deepest
	// Array.prototype.flat recursion.
	DefaultMaxNesting = 10000
	// DefaultMaxScriptBytes is the largest script accepted, in bytes.
	DefaultMaxScriptBytes = 256 << 10
	// DefaultMaxScriptNesting is the deepest bracket nesting accepted in
	// the script's source text.
	DefaultMaxScriptNesting = 1000
)

// FakeEpoch is where the script's clock starts on every run:
// 2000-01-01T00:00:00Z. Each reading of the clock advances it by one
// millisecond, so Date.now() tells a script nothing about the host or
// about earlier runs.
var FakeEpoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// RandomSeed seeds Math.random on every run (a PCG generator from
// math/rand/v2, seeded with RandomSeed and its bitwise complement): every
// run sees the same sequence, and never the host's random state.
const RandomSeed uint64 = 0x5a4d_6261_6e6b_0007

// Options configure the backend. A nil *Options, or a zero field, means the
// default.
type Options struct {
	// MaxCallStackSize bounds the JavaScript call depth (goja's
	// SetMaxCallStackSize). Default DefaultMaxCallStackSize.
	MaxCallStackSize int
	// MaxNesting bounds the nesting of JSON text parsed by JSON.parse
	// (including the input) and the depth of Array.prototype.flat.
	// Default DefaultMaxNesting.
	MaxNesting int
	// MaxScriptBytes bounds the script's size in bytes, and the size in
	// UTF-16 units of every source the script has parsed at run time
	// (eval, the function constructors, RegExp). Default
	// DefaultMaxScriptBytes, which is also its ceiling: see the package
	// doc's Security considerations.
	MaxScriptBytes int
	// MaxScriptNesting bounds the bracket nesting of the script's source
	// text and of every source parsed at run time. Default
	// DefaultMaxScriptNesting.
	MaxScriptNesting int
	// MaxLeftovers bounds the leftovers: runs Evaluate has returned from
	// (stopped at their wall clock, or cancelled) whose goroutine is still
	// inside a native operation goja cannot interrupt (WallClock soft).
	// Each holds a core until its operation ends, so each counts against
	// the backend's concurrency until then: while MaxLeftovers are
	// running, Evaluate refuses every new run at once with an
	// infrastructure outcome (retryable; see [MsgLeftovers]) rather than
	// run it beside them. Zero means runtime.GOMAXPROCS(0) at New: at
	// worst every core is taken by leftovers, never more goroutines than
	// cores. A stopped run counts against it once its goroutine is still
	// running LeftoverGrace after the stop: goja stops a script at its
	// next instruction, so only a native operation outlasts the grace,
	// and runs stopped in plain JavaScript never refuse others.
	MaxLeftovers int
}

// LeftoverGrace is how long a stopped run's goroutine may go on before it
// counts against [Options].MaxLeftovers: ample for goja to reach its next
// instruction on a loaded machine, short beside a native operation's
// seconds.
const LeftoverGrace = 250 * time.Millisecond

// MsgLeftovers is the message of the infrastructure outcome of a run
// refused while [Options].MaxLeftovers stopped runs are still running.
const MsgLeftovers = "goja: refused: too many stopped runs are still running a native operation (MaxLeftovers); retry later"

// The ceilings are the largest values New accepts for the options. goja
// recurses on the Go stack when it parses source text and JSON and when it
// flattens arrays, and a Go stack overflow is fatal: it ends the process,
// and no recover catches it. Measured on linux/amd64 (1 GB Go stack):
// JSON.parse crashed at 4,000,000 levels (1,000,000 passed); source text at
// 262,144 unclosed parentheses, where 250,000 closed ones passed. The
// script-size ceiling bounds what the bracket count cannot see (see
// jsfront.Nesting): about 131,000 hidden levels in 256 KiB, tested.
const (
	ceilingCallStack     = 10000
	ceilingNesting       = 100000
	ceilingScriptBytes   = DefaultMaxScriptBytes
	ceilingScriptNesting = 10000
)

// Backend is the goja engine, an spi.Backend. It holds only its
// settings: every Evaluate builds a new goja.Runtime.
type Backend struct {
	maxCallStack     int
	maxNesting       int
	maxScriptBytes   int
	maxScriptNesting int
	maxLeftovers     int64
	// leftovers counts the runs Evaluate returned from whose goroutine
	// has not ended; heavy, those of them still running LeftoverGrace
	// after their stop, which count against maxLeftovers.
	leftovers, heavy atomic.Int64
	// grace runs f once a stopped run's LeftoverGrace has passed
	// (time.AfterFunc; tests replace it).
	grace func(f func())
	// timer arms the wall clock (time.NewTimer; tests replace it).
	timer func(time.Duration) (<-chan time.Time, func() bool)
}

// newTimer is the backend's wall-clock timer.
func newTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

var (
	_ spi.Backend            = (*Backend)(nil)
	_ spi.ScriptSizer        = (*Backend)(nil)
	_ spi.HostObjectDeclarer = (*Backend)(nil)
)

// New returns a goja backend. It fails when an option is negative or above
// its ceiling.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	b := &Backend{
		maxCallStack:     DefaultMaxCallStackSize,
		maxNesting:       DefaultMaxNesting,
		maxScriptBytes:   DefaultMaxScriptBytes,
		maxScriptNesting: DefaultMaxScriptNesting,
		maxLeftovers:     int64(runtime.GOMAXPROCS(0)),
		timer:            newTimer,
		grace:            func(f func()) { time.AfterFunc(LeftoverGrace, f) },
	}
	var errs []error
	set := func(dst *int, v, ceiling int, name string) {
		switch {
		case v < 0:
			errs = append(errs, fmt.Errorf("goja: negative %s %d", name, v))
		case v > ceiling:
			errs = append(errs, fmt.Errorf("goja: %s %d is above the ceiling %d", name, v, ceiling))
		case v > 0:
			*dst = v
		}
	}
	set(&b.maxCallStack, o.MaxCallStackSize, ceilingCallStack, "MaxCallStackSize")
	set(&b.maxNesting, o.MaxNesting, ceilingNesting, "MaxNesting")
	set(&b.maxScriptBytes, o.MaxScriptBytes, ceilingScriptBytes, "MaxScriptBytes")
	set(&b.maxScriptNesting, o.MaxScriptNesting, ceilingScriptNesting, "MaxScriptNesting")
	switch {
	case o.MaxLeftovers < 0:
		errs = append(errs, fmt.Errorf("goja: negative MaxLeftovers %d", o.MaxLeftovers))
	case o.MaxLeftovers > 0:
		b.maxLeftovers = int64(o.MaxLeftovers)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b, nil
}

// MaxScriptBytes returns the largest script Evaluate runs, in bytes: it
// makes the backend an spi.ScriptSizer, so package effect refuses a larger
// script with its typed scriptTooLarge before goja sees it, as it does on
// every engine. (Called directly, without the effect, a larger script is a
// thrown SyntaxError.) The limit exists because goja's parser recurses on
// the Go stack (see the package doc).
func (b *Backend) MaxScriptBytes() int { return b.maxScriptBytes }

// HostObjects declares what a script sees beyond ECMAScript's standard
// globals: print and console's log, info, warn, error, debug and trace,
// which write nowhere (see installConsole), and files' read, write and
// list (files.go). The conformance kit fails anything else it finds. It
// makes the backend an spi.HostObjectDeclarer.
func (b *Backend) HostObjects() []string { return []string{"console.*", "files.*", "print.*"} }

// Evaluate runs req.Script in a new goja runtime with the global input set
// to the parsed req.Input, and reports the completion value as JSON text.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	if req.Limits.WallClock < 0 {
		return spi.Outcome{}, fmt.Errorf("goja: negative wall clock %v", req.Limits.WallClock)
	}
	if req.Limits.MemoryBytes < 0 {
		return spi.Outcome{}, fmt.Errorf("goja: negative memory limit %d", req.Limits.MemoryBytes)
	}
	switch {
	case len(req.Script) > b.maxScriptBytes:
		return spi.Threw("SyntaxError", fmt.Sprintf("the script is %d bytes, over the limit of %d", len(req.Script), b.maxScriptBytes)), nil
	case !utf8.Valid(req.Script):
		return spi.Threw("SyntaxError", "the script is not valid UTF-8"), nil
	case jsfront.Nesting(req.Script, b.maxScriptNesting) > b.maxScriptNesting:
		return spi.Threw("SyntaxError", fmt.Sprintf("the script nests brackets deeper than %d levels", b.maxScriptNesting)), nil
	}
	if jsonNesting(req.Input, b.maxNesting) > b.maxNesting {
		// Parsing it would overflow the engine's stack: the input does not
		// fit, as QuickJS reports the same input.
		return spi.InputTooLarge(), nil
	}

	// Refused while too many stopped runs go on (Options.MaxLeftovers).
	// The cap is checked, not reserved, as the effect's MaxAbandoned is:
	// runs already in flight may still be left over past it.
	if b.heavy.Load() >= b.maxLeftovers {
		return spi.Infrastructure(MsgLeftovers), nil
	}

	begun := time.Now()
	r, err := b.newRun(req)
	if err != nil {
		return spi.Outcome{}, err
	}
	if req.Host != nil {
		if err := r.installHost(ctx, req.Host, b.maxNesting); err != nil {
			return spi.Outcome{}, err
		}
	}
	done := make(chan spi.Outcome, 1)
	go func() {
		done <- r.exec()
		b.ended(r)
	}()

	started := r.started
	var expired <-chan time.Time
	var armed time.Time
	for {
		select {
		case out := <-done:
			// A run that outlived its wall clock (one long built-in call,
			// and the timer lost the race on a busy machine) never
			// delivers its value: the clock is a limit, whoever noticed
			// first.
			if !armed.IsZero() && time.Since(armed) > req.Limits.WallClock && out.Kind != spi.KindLimit {
				out = spi.Limited(spi.LimitWallClock)
			}
			out = r.files.Conclude(out)
			// exec set startedAt before it returned out: safe to read.
			if req.Logs != nil && !r.startedAt.IsZero() {
				out.Stats = spi.Stats{Startup: r.startedAt.Sub(begun), ScriptTime: time.Since(r.startedAt)}
			}
			return out, nil
		case <-started:
			// The wall clock is armed as the script starts: building the
			// runtime and parsing the input are not charged to it.
			started = nil
			if req.Limits.WallClock > 0 {
				armed = time.Now()
				c, stop := b.timer(req.Limits.WallClock)
				defer stop()
				expired = c
			}
		case <-expired:
			if r.stop(causeWall) {
				// goja stops at its next instruction; a long built-in call
				// finishes first, in the background (WallClock soft).
				b.leave(r)
				return spi.Limited(spi.LimitWallClock), nil
			}
			return <-done, nil // the run ended first and is delivering
		case <-ctx.Done():
			if r.stop(causeCtx) {
				b.leave(r)
				return spi.Outcome{}, ctx.Err()
			}
			return <-done, nil
		}
	}
}

// Leftovers returns how many runs Evaluate has returned from (stopped at
// their wall clock, or cancelled) are still running a native operation:
// the runs that count against Options.MaxLeftovers.
func (b *Backend) Leftovers() int { return int(b.leftovers.Load()) }

// The phases of a run's goroutine, for the count of leftovers.
const (
	phaseRunning int32 = iota // Evaluate is waiting for it
	phaseLeft                 // Evaluate returned; it is a leftover
	phaseHeavy                // a leftover past its grace: it counts against MaxLeftovers
	phaseEnded                // it returned
)

// leave is called when Evaluate returns without waiting for the run's
// goroutine: the run is a leftover until the goroutine ends, and counts
// against MaxLeftovers once it outlasts LeftoverGrace.
func (b *Backend) leave(r *run) {
	b.leftovers.Add(1)
	if !r.phase.CompareAndSwap(phaseRunning, phaseLeft) {
		b.leftovers.Add(-1) // it ended first
		return
	}
	b.grace(func() {
		b.heavy.Add(1)
		if !r.phase.CompareAndSwap(phaseLeft, phaseHeavy) {
			b.heavy.Add(-1) // it ended within its grace
		}
	})
}

// ended is called by the run's goroutine as it ends: a leftover frees its
// place.
func (b *Backend) ended(r *run) {
	switch r.phase.Swap(phaseEnded) {
	case phaseLeft:
		b.leftovers.Add(-1)
	case phaseHeavy:
		b.leftovers.Add(-1)
		b.heavy.Add(-1)
	}
}
