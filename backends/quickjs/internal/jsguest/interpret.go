package jsguest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/sandbank/sandbank/internal/jsfront"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// Ending says how the guest's _start call ended, as the host runtime saw
// it. The zero value is invalid.
type Ending int

// The endings.
const (
	// EndExit: the guest called proc_exit (or returned from _start).
	EndExit Ending = iota + 1
	// EndKilled: the host stopped the guest (its context was done).
	EndKilled
	// EndTrap: the guest trapped (unreachable, out-of-bounds access,
	// invalid table access, …).
	EndTrap
)

// Facts is everything a run left behind that the interpretation needs.
type Facts struct {
	// Record is the conclusive record read from stdout.
	Record wasmguest.Record
	// Script is the run's script as the caller gave it (the column of
	// a syntax error is found in it).
	Script []byte
	// InputRead is true when the guest began reading its stdin (the
	// engine had booted).
	InputRead bool
	// Started is true when the start record arrived (the script ran).
	Started bool
	// Ending is how _start ended; ExitCode is the exit code for EndExit;
	// Trap is the runtime's first line for EndTrap.
	Ending   Ending
	ExitCode uint32
	Trap     string
	// CanaryIntact is false when the stack guard found its canary, at
	// the bottom of the C stack, overwritten: the C stack overflowed.
	// With the stack pass's bound check (internal/wasm/rewrite) no frame
	// reaches the canary; it stays as a second line of defence.
	CanaryIntact bool
	// StackExhausted is true when the guest was stopped because a stack
	// ran out: the stack pass's bound check (the C stack in linear
	// memory) or the host runtime's own native call stack. Read like a
	// clobbered canary.
	StackExhausted bool
	// MemoryRefused is true when the host refused to grow linear memory
	// past the run's limit.
	MemoryRefused bool
	// WallClockExpired is true when the script's own clock ran out.
	WallClockExpired bool
	// Late is true when the script's record arrived after its wall clock
	// (Stdout.Took past it), whether or not the host's timer had fired
	// by then: a value after the deadline is never delivered.
	Late bool
}

// Messages of the outcomes the interpretation makes up itself.
const (
	// NameStackOverflow and MsgStackOverflow are the thrown error of a
	// run whose stack ran out: the name and message of V8's and
	// QuickJS's own (a native QuickJS throws InternalError "stack
	// overflow"; this build has no stack check of its own, so the host
	// makes the error up).
	NameStackOverflow = "RangeError"
	MsgStackOverflow  = "Maximum call stack size exceeded"
	msgTrap           = "the engine trapped (%s)"
	msgNoResult       = "the script ended the engine without a result (exit code %d)"
)

// ErrNoOutcome is returned (wrapped, naming the phase) when a run ended
// before the script started in a way that says nothing about the script:
// the start-up failed. The error is untyped and worth retrying.
var ErrNoOutcome = errors.New("quickjs: the engine stopped before the script started")

// Interpret turns the facts of one run into an outcome. It returns an
// error when no outcome was obtained: the engine stopped before the
// script started for a reason that is neither the input's size nor a
// memory limit (phase names the start-up phase the host was in).
func Interpret(f Facts, phase string) (spi.Outcome, error) {
	if !f.CanaryIntact || f.StackExhausted {
		if !f.Started {
			// The input's own nesting overflowed the stack while being
			// parsed: it cannot be parsed within the engine's memory.
			return spi.InputTooLarge(), nil
		}
		return spi.Threw(NameStackOverflow, MsgStackOverflow), nil
	}
	if f.Late && f.Started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	switch f.Record.Kind {
	case recResult:
		if f.Started {
			return spi.OK(json.RawMessage(f.Record.Body)), nil
		}
	case recThrew:
		if f.Started && f.MemoryRefused {
			// The memory refusal comes before whatever the script threw:
			// an allocation that fails leaves QuickJS throwing what it
			// still can (null, once it cannot allocate its own
			// InternalError "out of memory"), and a script that caught
			// the refusal and threw something else still ran out of its
			// memory. A value the script returned after catching the
			// refusal (recResult, above) stays its value.
			return spi.Limited(spi.LimitMemory), nil
		}
		if f.Started {
			name, message, err := thrown(f.Record.Body, f.Script)
			if err != nil {
				return spi.Outcome{}, err
			}
			return spi.Threw(name, message), nil
		}
	case recMemory:
		if f.Started {
			return spi.Limited(spi.LimitMemory), nil
		}
	case recInputOOM:
		if !f.Started {
			return spi.InputTooLarge(), nil
		}
	case recScriptOOM:
		if !f.Started {
			// The script itself did not fit in the engine's memory while
			// being read: the memory limit, not the input's size.
			return spi.Limited(spi.LimitMemory), nil
		}
	case recProtocol:
		if f.MemoryRefused {
			return spi.InputTooLarge(), nil
		}
		return spi.Outcome{}, errors.New("quickjs: the engine could not read the request payload")
	}
	if f.WallClockExpired && f.Started {
		return spi.Limited(spi.LimitWallClock), nil
	}
	if f.MemoryRefused {
		if f.Started || !f.InputRead {
			// The script ran out of memory, or the limit is below what
			// the engine needs to boot (about 512 KiB).
			return spi.Limited(spi.LimitMemory), nil
		}
		return spi.InputTooLarge(), nil
	}
	if !f.Started {
		return spi.Outcome{}, fmt.Errorf("%w (phase %s, %s)", ErrNoOutcome, phase, f.describe())
	}
	switch f.Ending {
	case EndTrap:
		// Nothing in the engine traps but a stack overflow (which the
		// stack pass's check and the host's native stack limit report as
		// StackExhausted, above) or its aftermath on a module without
		// the check (an overwritten function pointer or allocator state):
		// a thrown error, never a value.
		return spi.Threw("InternalError", fmt.Sprintf(msgTrap, wasmrun.FirstLine(f.Trap))), nil
	case EndKilled:
		return spi.Limited(spi.LimitWallClock), nil
	}
	return spi.Threw("Error", fmt.Sprintf(msgNoResult, f.ExitCode)), nil
}

// thrown reads a thrown record: the name, the message and, for a
// SyntaxError of the script itself, the line QuickJS reported it on. To
// that line it adds the column where goja's parser finds the script's
// first error when that error is on the same line (jsfront.SyntaxErrorAt),
// and no column otherwise: QuickJS's own column is that of the last
// identifier or white space its tokenizer read before the error (and
// counts line 1 from zero), never reliably the user's.
func thrown(body, script []byte) (name, message string, err error) {
	var rec []json.RawMessage
	var line int
	if err = json.Unmarshal(body, &rec); err == nil && (len(rec) < 2 || len(rec) > 3) {
		err = errors.New("wrong length")
	}
	if err == nil {
		err = json.Unmarshal(rec[0], &name)
	}
	if err == nil {
		err = json.Unmarshal(rec[1], &message)
	}
	if err == nil && len(rec) == 3 {
		err = json.Unmarshal(rec[2], &line)
	}
	if err != nil {
		return "", "", fmt.Errorf("quickjs: unreadable thrown record: %w", err)
	}
	if line > 0 {
		if l, c, ok := jsfront.SyntaxErrorAt(script); ok && l == line {
			message += fmt.Sprintf(" (line %d, column %d)", line, c)
		} else {
			message += fmt.Sprintf(" (line %d)", line)
		}
	}
	return name, message, nil
}

func (f Facts) describe() string {
	switch f.Ending {
	case EndExit:
		return fmt.Sprintf("exit code %d", f.ExitCode)
	case EndKilled:
		return "stopped by the host"
	case EndTrap:
		return "trap: " + wasmrun.FirstLine(f.Trap)
	}
	return "no ending"
}
