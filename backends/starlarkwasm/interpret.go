package starlarkwasm

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	"github.com/sandbank/sandbank/spi"
)

// ending says how the guest's run ended, as the host runtime saw it. The
// zero value is invalid.
type ending int

const (
	endExit   ending = iota + 1 // the guest exited (proc_exit or returning from _start)
	endKilled                   // the host stopped the guest (its context was done)
	endTrap                     // the guest trapped
)

// facts is everything a run left behind that its interpretation needs.
type facts struct {
	record    wasmguest.Record // the conclusive record read from stdout
	inputRead bool             // the guest began reading its stdin (the Go runtime had booted)
	started   bool             // the start record arrived: the script ran
	ending    ending
	exitCode  uint32 // for endExit
	trap      string // the runtime's first line, for endTrap
	// oom: the host refused to grow linear memory past the limit, or the
	// Go runtime reported "fatal error: out of memory".
	oom bool
	// stack: the Go runtime reported "fatal error: stack overflow" (a
	// goroutine stack past its maximum).
	stack       bool
	wallExpired bool // the script's own clock ran out
	// late: the conclusive record arrived after the wall clock (the
	// stream's own timing), whether or not the timer had fired by then.
	late bool
	// stderr is what the run kept of the guest's stderr.
	stderr *wasmguest.Capped
}

// Messages of the outcomes the interpretation makes up itself.
const (
	msgStackOverflow = "stack overflow: a value nested too deeply for the interpreter's stack"
	msgNoResult      = "the guest ended without a result (exit code %d)"
)

// errNoOutcome is returned (wrapped) when a run ended in a way that says
// nothing about the script: the guest failed on its own or before the
// script started. The error is untyped and worth retrying.
var errNoOutcome = errors.New("starlarkwasm: the guest stopped without an outcome")

// interpret turns the facts of one run into an outcome, or an error when
// the run says nothing about the script.
//
// A memory refusal before the guest read its stdin means the limit is
// below what the Go runtime needs to boot: the memory limit. After it
// began reading and before the script started, the input (or, rarely, the
// script's compile) did not fit: inputTooLarge.
func (f facts) interpret() (spi.Outcome, error) {
	if f.late && f.started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	switch f.record.Kind {
	case wasmguest.RecResult:
		if f.started {
			return spi.OK(json.RawMessage(f.record.Body)), nil
		}
		return spi.Outcome{}, fmt.Errorf("%w: a result before the script started", errNoOutcome)
	case wasmguest.RecThrew:
		// Before the start too: a syntax error or a refused load.
		var pair [2]string
		if err := json.Unmarshal(f.record.Body, &pair); err != nil {
			return spi.Outcome{}, fmt.Errorf("starlarkwasm: unreadable thrown record: %w", err)
		}
		if f.started && allocationRefused(pair[0], pair[1]) {
			return spi.Limited(spi.LimitMemory), nil
		}
		return spi.Threw(pair[0], pair[1]), nil
	case wasmguest.RecCPU:
		if f.started {
			return spi.Limited(spi.LimitCPU), nil
		}
	case wasmguest.RecProtocol:
		return spi.Outcome{}, fmt.Errorf("%w: the guest could not read or run the request", errNoOutcome)
	}
	if f.wallExpired && f.started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	if f.oom {
		if f.started || !f.inputRead {
			return spi.Limited(spi.LimitMemory), nil
		}
		return spi.InputTooLarge(), nil
	}
	if f.stack && f.started {
		return spi.Threw("Error", msgStackOverflow), nil
	}
	if f.ending == endKilled && f.started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	return spi.Outcome{}, fmt.Errorf("%w (%s)", errNoOutcome, f.describe())
}

func (f facts) describe() string {
	switch f.ending {
	case endExit:
		return fmt.Sprintf(msgNoResult, f.exitCode)
	case endKilled:
		return "stopped by the host"
	case endTrap:
		return "trap: " + f.trap
	}
	return "no ending"
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
