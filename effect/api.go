package effect

// This file declares the constants, options and failure vocabulary of package
// effect. The Effect itself is in effect.go, the stores in store.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

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

// DefaultMaxAbandoned is the default cap on abandoned backend calls per
// Effect (see Options.MaxAbandoned).
const DefaultMaxAbandoned = 64

// DefaultCloseTimeout is how long Close waits for the backend's Close by
// default.
const DefaultCloseTimeout = 30 * time.Second

// DefaultWarmTimeout is the default deadline of Warm: long enough for a
// cold wasm compile on a loaded machine.
const DefaultWarmTimeout = 60 * time.Second

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
	// DefaultMaxScriptBytes. A backend that is an spi.ScriptSizer with a
	// smaller bound lowers it to that bound.
	MaxScriptBytes int64
	// BackendGrace is how long past the wall clock the effect waits for the
	// backend to settle. Nil means DefaultBackendGrace; it must be >= 0.
	BackendGrace *time.Duration
	// MaxAbandoned caps the calls the effect gave up on (a backend past the
	// deadline or the caller's cancellation, a script reader past the
	// caller's cancellation) that have not returned yet: each holds a
	// goroutine, which cannot be killed. While that many
	// are outstanding, Evaluate and Warm refuse new work with an error
	// matching ErrOverloaded (retryable); a late return frees its slot.
	// Zero means DefaultMaxAbandoned; it must be >= 0.
	MaxAbandoned int
	// CloseTimeout bounds how long Close waits for the backend's Close;
	// past it Close returns a retryable error and leaves the backend's
	// Close running. Zero means DefaultCloseTimeout; it must be >= 0.
	CloseTimeout time.Duration
	// WarmTimeout is Warm's own deadline, on top of its context's; past it
	// Warm returns a retryable error. Zero means DefaultWarmTimeout; it
	// must be >= 0.
	WarmTimeout time.Duration
	// AllowNetwork accepts a backend whose Network is not NetworkNone.
	AllowNetwork bool
	// AllowReusedEnvironment accepts a backend whose FreshPerRun is false.
	AllowReusedEnvironment bool
	// Host holds the host functions every call's script may call (see
	// HostFunc); a call's own Call.Host adds to them and replaces those of
	// the same name. A backend whose capabilities do not declare HostCalls
	// is refused when Host is not empty. Nil means none.
	Host HostFuncs
	// MaxHostCalls bounds the host calls one run may make; the call past
	// it ends the run with limitExceeded (hostCalls). Zero means
	// DefaultMaxHostCalls; it must be >= 0.
	MaxHostCalls int
	// MaxHostArgBytes bounds a host call's argument as JSON text; a larger
	// one is refused with an error thrown into the script. Zero means
	// DefaultMaxHostArgBytes; it must be >= 0.
	MaxHostArgBytes int64
	// MaxHostResultBytes bounds a host function's result as JSON text; a
	// larger one is refused with an error thrown into the script. Zero
	// means DefaultMaxHostResultBytes; it must be >= 0.
	MaxHostResultBytes int64
	// MaxConcurrentHostCalls bounds the host functions of one run running
	// at once, when the script has several calls in flight; a call past
	// it waits for a running one to return, and calls start in the order
	// issued. The calls waiting hold at most MaxHostArgBytes ×
	// MaxConcurrentHostCalls bytes of arguments; a call past that is
	// refused with an error thrown into the script. Zero means
	// DefaultMaxConcurrentHostCalls; it must be >= 0.
	MaxConcurrentHostCalls int

	// MaxLogBytes bounds the text a run's record keeps of what the script
	// logged. Zero means DefaultMaxLogBytes; it must be >= 0.
	MaxLogBytes int64
	// MaxLogLines bounds the lines a run's record keeps. Zero means
	// DefaultMaxLogLines; it must be >= 0.
	MaxLogLines int
	// Engine is the engine's name as receipts record it ("quickjs").
	// Empty means the backend's Go type ("*quickjs.Backend").
	Engine string
	// EventBuffer is how many events of one run may wait for a slow
	// Call.Events sink before later ones are dropped (and counted). Zero
	// means DefaultEventBuffer; it must be >= 0.
	EventBuffer int
	// Logger, when not nil, receives the effect's own diagnostics: one
	// record per run (debug; warn for infrastructure), never the
	// script's logs. Nil means none.
	Logger *slog.Logger
	// TracerProvider, when not nil, traces every run as an OpenTelemetry
	// span (see trace.go). Nil means no tracing; no global provider is
	// ever read.
	TracerProvider trace.TracerProvider
	// Signer, when not nil, signs the receipt of every run that has a
	// record (Run's; Evaluate's only when its events or the Logger or the
	// TracerProvider make it build one), so that anyone holding its
	// public key can check who vouches for the run (Verify with
	// WithKeys). A Signer whose public key is not an Ed25519 key is
	// refused (ErrInvalidKey). When Sign fails, the record's receipt is
	// unsigned and Run returns an infrastructure error (retryable) instead
	// of the run's value or failure. Nil means receipts are not signed.
	Signer Signer
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
	// Host holds host functions for this call only, added to
	// Options.Host (a name in both takes this call's). A call with host
	// functions on a backend that does not declare HostCalls is refused
	// with ErrInvalidHost before the backend is called.
	Host HostFuncs
	// Events, when not nil, receives the run's events as they happen
	// (see Event): on a goroutine of its own, never stalling the run.
	Events func(Event)
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

// LimitKind names a limit of a typed failure. The zero value is invalid;
// values are never renumbered.
//
// It is a superset of spi.LimitKind: the kinds a backend reports (cpu,
// memory, wallClock) have the same names and the same numbers here, and
// [LimitKindOf] converts one to the other. The effect adds the limits it
// enforces itself: output (the result's size or depth) and input (the
// input ceiling). Compare a Failure's Kind with these constants, never with
// spi's.
type LimitKind int

// The limit kinds of a typed failure.
const (
	// LimitCPU: a CPU or step budget ran out (spi.LimitCPU).
	LimitCPU LimitKind = iota + 1
	// LimitMemory: the memory limit was reached (spi.LimitMemory); for
	// inputTooLarge, the input did not fit in the engine's memory while
	// being parsed.
	LimitMemory
	// LimitWallClock: the wall clock ran out (spi.LimitWallClock).
	LimitWallClock
	// LimitOutput: the result exceeded MaxOutputBytes or MaxOutputDepth.
	// The effect's own limit; no spi kind.
	LimitOutput
	// LimitInput: the input exceeded MaxInputBytes and was refused before
	// the run (inputTooLarge only). The effect's own limit; no spi kind.
	LimitInput
	// LimitHostCalls: the script made more host calls than MaxHostCalls
	// (Failure.Limit holds the bound). The effect's own limit; no spi
	// kind.
	LimitHostCalls
)

var limitNames = [...]string{LimitCPU: "cpu", LimitMemory: "memory", LimitWallClock: "wallClock", LimitOutput: "output", LimitInput: "input", LimitHostCalls: "hostCalls"}

// Valid reports whether k is one of the defined limit kinds.
func (k LimitKind) Valid() bool { return k >= LimitCPU && k <= LimitHostCalls }

// String returns "cpu", "memory", "wallClock", "output", "input" or
// "hostCalls".
func (k LimitKind) String() string {
	if !k.Valid() {
		return fmt.Sprintf("LimitKind(%d)", int(k))
	}
	return limitNames[k]
}

// LimitKindOf returns the effect's kind for a backend's kind: the one of
// the same name. It reports false for a kind outside spi's set.
func LimitKindOf(k spi.LimitKind) (LimitKind, bool) {
	switch k {
	case spi.LimitCPU:
		return LimitCPU, true
	case spi.LimitMemory:
		return LimitMemory, true
	case spi.LimitWallClock:
		return LimitWallClock, true
	default:
		return 0, false
	}
}

// MaxOutputDepth is the deepest nesting of arrays and objects a result may
// have. A deeper result is limitExceeded (output), on every engine: the
// effect checks the depth before anything parses the value (encoding/json
// itself refuses text nested past this depth).
const MaxOutputDepth = 10000

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
	// Kind is the limit hit (CodeLimitExceeded), or what the input did not
	// fit in (CodeInputTooLarge): LimitInput, the input ceiling
	// (MaxInputBytes), before the run; LimitMemory, the engine's memory
	// while parsing the input.
	Kind LimitKind
	// Name and Message describe the error (CodeScriptError), bounded and
	// storable.
	Name    string
	Message string
	// Reason says why (CodeInputNotSerializable; CodeShapeMismatch: the
	// first violation; CodeLimitExceeded, when the effect can say more
	// than the kind: the output depth limit), bounded.
	Reason string
	// Bytes and Limit size the input (CodeInputTooLarge): Limit is
	// MaxInputBytes when the input was refused before the run, or the
	// memory limit when it did not fit while being parsed. For
	// CodeScriptTooLarge they size the script against MaxScriptBytes. For
	// CodeLimitExceeded with Kind LimitHostCalls, Limit is MaxHostCalls.
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
