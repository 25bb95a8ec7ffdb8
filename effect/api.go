package effect

// This file declares the exported API of package effect. The implementation
// is in progress: bodies that say "unimplemented" are being written.

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

// DefaultWallClock is the default wall-clock limit of an evaluation.
const DefaultWallClock = 5 * time.Second

// DefaultBackendGrace is how long past the wall clock the effect waits for
// a backend before it gives up on it.
const DefaultBackendGrace = 60 * time.Second

// MaxTextUnits bounds every text that comes from a script or a backend, in
// UTF-16 code units.
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
	// DefaultMaxOutputBytes.
	MaxOutputBytes int64
	// BackendGrace is how long past the wall clock the effect waits for the
	// backend to settle. Nil means DefaultBackendGrace; it must be >= 0.
	BackendGrace *time.Duration
	// AllowNetwork accepts a backend whose Network is not NetworkNone.
	AllowNetwork bool
	// AllowReusedEnvironment accepts a backend whose FreshPerRun is false.
	AllowReusedEnvironment bool
}

// Call is one evaluation request.
type Call struct {
	// Script is the content address of the script ("sha256:<64 hex>").
	Script Address
	// Input is the script's input: any value encoding/json can marshal, or
	// a json.RawMessage taken as is once validated.
	Input any
	// Limits may tighten the effect's limits for this call; zero fields
	// mean the effect's. A field above the effect's ceiling is refused.
	Limits spi.Limits
	// Shape is an optional JSON Schema the result must satisfy.
	Shape json.RawMessage
}

// Effect is the only way to use a backend: it owns every guarantee around
// it. It is safe for concurrent use.
type Effect struct {
	// unexported fields, owned by the implementation
	_ struct{}
}

// New returns an Effect over backend, reading scripts from scripts. A nil
// opts means defaults. New reads the backend's capabilities once, validates
// them and keeps a frozen copy; it refuses a backend that declares network
// access or reused environments unless the options allow it.
func New(scripts ScriptReader, backend spi.Backend, opts *Options) (*Effect, error) {
	panic("unimplemented")
}

// Evaluate runs the script named by call.Script with call.Input, in the
// order the design gives (input, script, backend race, outcome mapping,
// output bound, shape), and returns the result as canonical JSON text. A
// typed failure is a *Failure; a cancelled ctx yields ctx.Err(); anything
// else is an untyped, retryable error.
func (e *Effect) Evaluate(ctx context.Context, call Call) (json.RawMessage, error) {
	panic("unimplemented")
}

// Capabilities returns the frozen, validated copy of the backend's
// declaration taken at construction.
func (e *Effect) Capabilities() spi.Capabilities { panic("unimplemented") }

// Idempotent reports whether a re-run is safe by construction: the backend
// declares no network and a fresh environment per run.
func (e *Effect) Idempotent() bool { panic("unimplemented") }

// Warm asks the backend to prepare, when it implements spi.Warmer.
func (e *Effect) Warm(ctx context.Context) error { panic("unimplemented") }

// Close closes the backend when it is an io.Closer. Calls after Close fail
// with ErrClosed.
func (e *Effect) Close() error { panic("unimplemented") }

// Error implements error. The text starts with "effect:", has fixed
// wording and never echoes script source.
func (f *Failure) Error() string { panic("unimplemented") }

// Unwrap returns the sentinel of f.Code.
func (f *Failure) Unwrap() error { panic("unimplemented") }

// Retryable reports whether err is worth retrying: true for untyped
// errors, false for nil, for a *Failure and for context.Canceled.
func Retryable(err error) bool { panic("unimplemented") }

// AddressOf returns the content address of b.
func AddressOf(b []byte) Address { panic("unimplemented") }

// ParseAddress checks that s is a well-formed content address.
func ParseAddress(s string) (Address, error) { panic("unimplemented") }

// MemoryStore is an in-memory, content-addressed script store, safe for
// concurrent use.
type MemoryStore struct{ _ struct{} }

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { panic("unimplemented") }

// Put stores b and returns its address.
func (s *MemoryStore) Put(b []byte) (Address, error) { panic("unimplemented") }

// ReadScript implements ScriptReader.
func (s *MemoryStore) ReadScript(ctx context.Context, addr Address) ([]byte, error) {
	panic("unimplemented")
}

// DirStore is a content-addressed script store in a directory on disk:
// files are written atomically and verified on read.
type DirStore struct{ _ struct{} }

// NewDirStore opens (creating if needed) a store in dir.
func NewDirStore(dir string) (*DirStore, error) { panic("unimplemented") }

// Put stores b and returns its address.
func (s *DirStore) Put(b []byte) (Address, error) { panic("unimplemented") }

// ReadScript implements ScriptReader.
func (s *DirStore) ReadScript(ctx context.Context, addr Address) ([]byte, error) {
	panic("unimplemented")
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
)

var codeNames = [...]string{
	CodeInputNotSerializable: "inputNotSerializable",
	CodeInputTooLarge:        "inputTooLarge",
	CodeScriptMissing:        "scriptMissing",
	CodeLimitExceeded:        "limitExceeded",
	CodeScriptError:          "scriptError",
	CodeShapeMismatch:        "shapeMismatch",
}

// Valid reports whether c is one of the defined codes.
func (c Code) Valid() bool { return c >= CodeInputNotSerializable && c <= CodeShapeMismatch }

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
)

// ErrClosed is returned by calls on an Effect after Close.
var ErrClosed = errors.New("effect: closed")

// Failure is a typed failure: the script's own outcome (or the caller's
// input), not retryable. Match it with errors.As, or a code's sentinel with
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
	// memory limit when it did not fit while being parsed.
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
