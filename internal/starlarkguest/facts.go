// Package starlarkguest reads what a run of the Starlark guest
// (backends/starlarkwasm/guest) left behind, whichever way the guest ran:
// compiled to WebAssembly (backends/starlarkwasm) or natively in a
// confined process (backends/starlarknative). Both engines gather the
// same [Facts] and decide the outcome with the one [Facts.Interpret].
package starlarkguest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/sandbank/sandbank/internal/runfiles"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// Ending says how the guest's run ended, as the host saw it. The zero
// value is invalid.
type Ending int

const (
	EndExit   Ending = iota + 1 // the guest exited (proc_exit, returning from _start, or a native exit)
	EndKilled                   // the host stopped the guest (its context was done)
	EndTrap                     // the guest trapped (a native guest: a signal the host did not send)
)

// Facts is everything a run left behind that its interpretation needs.
type Facts struct {
	Record    wasmguest.Record // the conclusive record read from stdout
	InputRead bool             // the guest began reading its stdin (the Go runtime had booted)
	Started   bool             // the start record arrived: the script ran
	Ending    Ending
	ExitCode  uint32 // for EndExit
	Trap      string // the runtime's first line (a native guest: its signal), for EndTrap
	// OOM: the host refused to grow linear memory past the limit, the
	// kernel killed a native guest for its cgroup's memory limit, or the
	// Go runtime reported "fatal error: out of memory".
	OOM bool
	// Stack: the Go runtime reported "fatal error: stack overflow" (a
	// goroutine stack past its maximum).
	Stack       bool
	WallExpired bool // the script's own clock ran out
	// Late: the conclusive record arrived after the wall clock (the
	// stream's own timing), whether or not the timer had fired by then.
	Late bool
	// Stderr is what the run kept of the guest's stderr.
	Stderr *wasmguest.Capped
	// Files are the run's files, which the host served the guest's file
	// records from (nil: the run had none).
	Files *runfiles.Set
}

// Messages of the outcomes the interpretation makes up itself.
const (
	msgStackOverflow = "stack overflow: a value nested too deeply for the interpreter's stack"
	msgNoResult      = "the guest ended without a result (exit code %d)"
)

// ErrNoOutcome is returned (wrapped) when a run ended in a way that says
// nothing about the script: the guest failed on its own or before the
// script started. The error is untyped and worth retrying.
var ErrNoOutcome = errors.New("starlark guest: the guest stopped without an outcome")

// Interpret turns the Facts of one run into an outcome, or an error when
// the run says nothing about the script.
//
// A memory refusal before the guest read its stdin means the limit is
// below what the Go runtime needs to boot: the memory limit. After it
// began reading and before the script started, the input (or, rarely, the
// script's compile) did not fit: inputTooLarge.
//
// A write past the output files' bounds is the host's finding (f.Files):
// LimitFiles, whatever the guest did after; the output files go with an
// OK outcome only.
func (f Facts) Interpret() (spi.Outcome, error) {
	if f.Files.Exceeded() && f.Started {
		return spi.Limited(spi.LimitFiles), nil
	}
	out, err := f.interpret()
	if err != nil {
		return out, err
	}
	return f.Files.Conclude(out), nil
}

// interpret is Interpret without the files.
func (f Facts) interpret() (spi.Outcome, error) {
	if f.Late && f.Started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	switch f.Record.Kind {
	case wasmguest.RecResult:
		if f.Started {
			return spi.OK(json.RawMessage(f.Record.Body)), nil
		}
		return spi.Outcome{}, fmt.Errorf("%w: a result before the script started", ErrNoOutcome)
	case wasmguest.RecThrew:
		// Before the start too: a syntax error or a refused load.
		var pair [2]string
		if err := json.Unmarshal(f.Record.Body, &pair); err != nil {
			return spi.Outcome{}, fmt.Errorf("starlark guest: unreadable thrown record: %w", err)
		}
		if f.Started && allocationRefused(pair[0], pair[1]) {
			return spi.Limited(spi.LimitMemory), nil
		}
		return spi.Threw(pair[0], pair[1]), nil
	case wasmguest.RecCPU:
		if f.Started {
			return spi.Limited(spi.LimitCPU), nil
		}
	case wasmguest.RecProtocol:
		return spi.Outcome{}, fmt.Errorf("%w: the guest could not read or run the request", ErrNoOutcome)
	}
	if f.WallExpired && f.Started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	if f.OOM {
		if f.Started || !f.InputRead {
			return spi.Limited(spi.LimitMemory), nil
		}
		return spi.InputTooLarge(), nil
	}
	if f.Stack && f.Started {
		return spi.Threw("Error", msgStackOverflow), nil
	}
	if f.Ending == EndKilled && f.Started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	return spi.Outcome{}, fmt.Errorf("%w (%s)", ErrNoOutcome, f.Describe())
}

func (f Facts) Describe() string {
	switch f.Ending {
	case EndExit:
		return fmt.Sprintf(msgNoResult, f.ExitCode)
	case EndKilled:
		return "stopped by the host"
	case EndTrap:
		return "trap: " + f.Trap
	}
	return "no Ending"
}

// refusedAllocation matches the interpreter's own refusal of one
// allocation of a gigabyte or more (go.starlark.net's maxAlloc guard on
// repeating a string, bytes, list or tuple), as the guest reports it: a
// runtime error at a position of the script, never the text of fail().
var refusedAllocation = regexp.MustCompile(`^script\.star:\d+:\d+: (excessive repeat \(\d+ \* \d+ elements\)|repeat count \d+ too large)$`)

// allocationRefused reports whether a thrown error is the interpreter
// refusing an allocation of a gigabyte or more. A run's memory is capped at
// MaxMemoryBytes (1 GiB) or less, so such an allocation is always past the
// memory limit: the run ran out of its memory, limitExceeded memory, as
// when the guest's Go runtime runs out, not a script error.
func allocationRefused(name, msg string) bool {
	return name == "Error" && refusedAllocation.MatchString(msg)
}
