package effect

// This file declares the constants, options and failure vocabulary of package
// effect. The Effect itself is in effect.go, the stores in store.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// DefaultMemoryBytes is the default memory limit of an evaluation, 32 MiB.
const DefaultMemoryBytes int64 = 32 << 20

// DefaultMaxInputBytes is the default ceiling on the caller's input as JSON
// text. It is the default memory limit, derived from the same constant so
// the two cannot drift apart.
const DefaultMaxInputBytes = DefaultMemoryBytes

// DefaultMaxOutputBytes is the default ceiling on the script's result as
// JSON text, 4 MiB.
const DefaultMaxOutputBytes int64 = 4 << 20

// DefaultMaxScriptBytes is the default ceiling on a script's size, 16 MiB:
// scripts include Extism wasm plugins, which are commonly a few MiB, so the
// bound leaves room for them while keeping a run by source, or a damaged
// store, from handing an engine an unbounded blob.
const DefaultMaxScriptBytes int64 = 16 << 20

// DefaultWallClock is the default wall-clock limit of an evaluation.
const DefaultWallClock = 5 * time.Second

// DefaultBackendGrace is how long past the wall clock the effect waits for
// a backend before it gives up on it.
const DefaultBackendGrace = 60 * time.Second

// MaxTextUnits bounds every text that comes from a script or a backend, in
// UTF-16 code units. A text cut at the bound ends with the marker
// "…[truncated]" (12 units), past the bound.
const MaxTextUnits = 2048

// Options configure an Effect. The zero value (or a nil *Options) means
// defaults.
type Options struct {
	// Limits is the ceiling for every call, and the limits used when a call
	// sets none. A zero WallClock means DefaultWallClock; a zero
	// MemoryBytes means DefaultMemoryBytes. Negative values are refused.
	Limits spi.Limits
	// MaxInputBytes bounds the input as JSON text. Zero means
	// DefaultMaxInputBytes.
	MaxInputBytes int64
	// MaxOutputBytes bounds the result as JSON text. Zero means
	// DefaultMaxOutputBytes. Both the backend's text without insignificant
	// white space and the canonical text returned to the caller must fit:
	// the first is checked before the value is decoded, so an oversized
	// value is refused without parsing it.
	MaxOutputBytes int64
	// MaxScriptBytes bounds a script's size, whether it comes from the
	// call's Source or from the store: a larger script is the typed
	// failure scriptTooLarge, before the backend is called. Zero means
	// DefaultMaxScriptBytes.
	MaxScriptBytes int64
	// BackendGrace is how long past the wall clock the effect waits for the
	// backend to settle. Nil means DefaultBackendGrace; it must be >= 0.
	BackendGrace *time.Duration
	// AllowNetwork accepts a backend whose Network is not NetworkNone.
	AllowNetwork bool
	// AllowReusedEnvironment accepts a backend whose FreshPerRun is false.
	AllowReusedEnvironment bool
}

// Call is one evaluation request. It names the script by Script, carries it
// as Source, or both.
type Call struct {
	// Script is the content address of the script ("sha256:<64 hex>"),
	// read from the effect's ScriptReader when Source is nil.
	Script Address
	// Source, when not nil, is the script itself: the effect copies and
	// hashes it and runs it exactly as if it had been stored under its
	// address, without reading or writing the store. When Script is also
	// set, Source must hash to it (else ErrInvalidSource). A call with
	// neither is ErrInvalidSource. An empty, non-nil Source is the empty
	// script.
	Source []byte
	// Input is the script's input: any value encoding/json can marshal, or
	// a json.RawMessage taken as is once validated.
	Input any
	// Limits may tighten the effect's limits for this call; zero fields
	// mean the effect's. A field above the effect's ceiling is refused.
	Limits spi.Limits
	// Shape is an optional JSON Schema the result must satisfy.
	Shape json.RawMessage
}

// Code is the closed set of typed failure codes. The zero value is
// invalid; values are never renumbered.
type Code int

// The typed failure codes.
const (
	CodeInputNotSerializable Code = iota + 1
	CodeInputTooLarge
	CodeScriptMissing
	CodeLimitExceeded
	CodeScriptError
	CodeShapeMismatch
	CodeScriptTooLarge
)

var codeNames = [...]string{
	CodeInputNotSerializable: "inputNotSerializable",
	CodeInputTooLarge:        "inputTooLarge",
	CodeScriptMissing:        "scriptMissing",
	CodeLimitExceeded:        "limitExceeded",
	CodeScriptError:          "scriptError",
	CodeShapeMismatch:        "shapeMismatch",
	CodeScriptTooLarge:       "scriptTooLarge",
}

// Valid reports whether c is one of the defined codes.
func (c Code) Valid() bool { return c >= CodeInputNotSerializable && c <= CodeScriptTooLarge }

// String returns the code's name, such as "limitExceeded".
func (c Code) String() string {
	if !c.Valid() {
		return fmt.Sprintf("Code(%d)", int(c))
	}
	return codeNames[c]
}

// LimitKind names the limit a limitExceeded failure hit. The zero value is
// invalid.
type LimitKind int

// The limit kinds of a typed failure.
const (
	LimitCPU LimitKind = iota + 1
	LimitMemory
	LimitWallClock
	LimitOutput
)

var limitNames = [...]string{LimitCPU: "cpu", LimitMemory: "memory", LimitWallClock: "wallClock", LimitOutput: "output"}

// Valid reports whether k is one of the defined limit kinds.
func (k LimitKind) Valid() bool { return k >= LimitCPU && k <= LimitOutput }

// String returns "cpu", "memory", "wallClock" or "output".
func (k LimitKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("LimitKind(%d)", int(k))
	}
	return limitNames[k]
}

// Sentinels, one per code: every *Failure unwraps to the sentinel of its
// code, so errors.Is(err, effect.ErrLimitExceeded) works.
var (
	ErrInputNotSerializable = errors.New("effect: input not serializable")
	ErrInputTooLarge        = errors.New("effect: input too large")
	ErrScriptMissing        = errors.New("effect: script missing")
	ErrLimitExceeded        = errors.New("effect: limit exceeded")
	ErrScriptError          = errors.New("effect: script error")
	ErrShapeMismatch        = errors.New("effect: shape mismatch")
	ErrScriptTooLarge       = errors.New("effect: script too large")
)

// Failure is a typed failure: the script's own outcome (or the size or
// encoding of what the caller handed it), not retryable. Match it with errors.As, or a code's sentinel with
// errors.Is.
type Failure struct {
	Code Code
	// Kind is the limit hit (CodeLimitExceeded).
	Kind LimitKind
	// Name and Message describe the error (CodeScriptError), bounded and
	// storable.
	Name    string
	Message string
	// Reason says why (CodeInputNotSerializable; CodeShapeMismatch: the
	// first violation), bounded.
	Reason string
	// Bytes and Limit size the input (CodeInputTooLarge): Limit is
	// MaxInputBytes when the input was refused before the run, or the
	// memory limit when it did not fit while being parsed. For
	// CodeScriptTooLarge they size the script against MaxScriptBytes.
	Bytes int64
	Limit int64
	// Script is the missing script's address (CodeScriptMissing).
	Script Address
}

// Address is a script's content address, "sha256:" followed by 64
// lower-case hex digits.
type Address string

// ScriptReader fetches script bytes by content address. A script that is
// not there is reported with an error for which errors.Is(err,
// fs.ErrNotExist) holds.
type ScriptReader interface {
	ReadScript(ctx context.Context, addr Address) ([]byte, error)
}
