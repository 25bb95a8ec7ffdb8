package effect

import (
	"log/slog"
	"time"

	"github.com/sandbank/sandbank/spi"
	"go.opentelemetry.io/otel/trace"
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

// defaultMaxAbandoned is the default cap on abandoned backend calls per
// Effect (see Options.MaxAbandoned).
const defaultMaxAbandoned = 64

// defaultCloseTimeout is how long Close waits for the backend's Close by
// default.
const defaultCloseTimeout = 30 * time.Second

// defaultWarmTimeout is the default deadline of Warm: long enough for a
// cold wasm compile on a loaded machine.
const defaultWarmTimeout = 60 * time.Second

// Options configure an Effect. The zero value (or a nil *Options) means
// defaults.
type Options struct {
	// Limits is the ceiling for every call, and the limits used when a call
	// sets none. A zero WallClock means DefaultWallClock; a zero
	// MemoryBytes means DefaultMemoryBytes; a zero MaxOutFiles or
	// MaxOutFileBytes means 64 files or 16 MiB (set for a backend that
	// declares Files only). Negative values are refused.
	Limits spi.Limits
	// MaxInputBytes bounds the input as JSON text. Zero means
	// DefaultMaxInputBytes.
	MaxInputBytes int64
	// MaxInputFiles and MaxInputFileBytes bound a call's input files:
	// their count and their bytes in all. Zero means the defaults (64
	// files, 16 MiB); a call past either is refused with ErrInputTooLarge
	// (LimitInput) before the backend is called; negative values are
	// refused (ErrInvalidLimits). The output files' bounds
	// are Limits.MaxOutFiles and MaxOutFileBytes (zero: the same
	// defaults).
	MaxInputFiles     int
	MaxInputFileBytes int64
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
	// Zero means 64; it must be >= 0.
	MaxAbandoned int
	// CloseTimeout bounds how long Close waits for the backend's Close;
	// past it Close returns a retryable error and leaves the backend's
	// Close running. Zero means 30 s; it must be >= 0.
	CloseTimeout time.Duration
	// WarmTimeout is Warm's own deadline, on top of its context's; past it
	// Warm returns a retryable error. Zero means 60 s; it
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
	// 1 MiB; it must be >= 0.
	MaxHostArgBytes int64
	// MaxHostResultBytes bounds a host function's result as JSON text; a
	// larger one is refused with an error thrown into the script. Zero
	// means DefaultMaxOutputBytes (4 MiB); it must be >= 0.
	MaxHostResultBytes int64
	// MaxConcurrentHostCalls bounds the host functions of one run running
	// at once, when the script has several calls in flight; a call past
	// it waits for a running one to return, and calls start in the order
	// issued. The calls waiting hold at most MaxHostArgBytes ×
	// MaxConcurrentHostCalls bytes of arguments; a call past that is
	// refused with an error thrown into the script. Zero means
	// 8; it must be >= 0.
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
	// means 256; it must be >= 0.
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
	// public key can check who vouches for the run (receipt.Verify with
	// receipt.WithKeys). A Signer whose public key is not an Ed25519 key is
	// refused (ErrInvalidKey). When Sign fails, the record's receipt is
	// unsigned and Run returns an infrastructure error (retryable) instead
	// of the run's value or failure. Nil means receipts are not signed.
	Signer Signer
}
