package spi

import (
	"context"
	"encoding/json"
	"time"
)

// Version is the semantic version of this service-provider interface.
const Version = "1.5.0"

// Backend is a sandbox engine. Implementations must be safe for concurrent
// use: the effect may call Evaluate from many goroutines at once.
type Backend interface {
	// Capabilities declares what the backend enforces. The effect reads it
	// once, at construction, and keeps a validated copy.
	Capabilities() Capabilities

	// Evaluate runs req.Script with req.Input under req.Limits and reports
	// what happened. ctx is cancelled when the caller cancels or when the
	// effect's deadline (WallClock plus a grace) passes; a backend that
	// declares WallClockHard must stop the script and return promptly when
	// ctx is done. A non-nil error means no outcome was obtained.
	Evaluate(ctx context.Context, req Request) (Outcome, error)
}

// Warmer is implemented by backends that can prepare ahead of the first
// request (compile a module, fill a pool). Warm is advisory: a backend that
// was never warmed must still work.
type Warmer interface {
	Warm(ctx context.Context) error
}

// ScriptSizer is implemented by backends whose engine cannot take a script
// past some size (a parser that recurses on the Go stack, say). The effect
// reads MaxScriptBytes once, when it is made, and refuses a larger script
// with its typed scriptTooLarge failure before the backend is called, so
// that every engine reports an oversized script the same way. A value of
// zero or less means the backend sets no bound of its own.
type ScriptSizer interface {
	MaxScriptBytes() int
}

// HostObjectDeclarer is implemented by backends that give scripts names
// beyond their language's standard set (a console whose output goes
// nowhere, say). HostObjects lists them as the conformance kit's
// host_objects case reports them: a path ("console.log"), or a prefix
// ending in ".*" ("console.*") for a name and everything under it. The kit
// enumerates what a script can reach and fails every name outside the
// standard set that is not declared, so the list is a declaration the kit
// measures, like the capabilities.
type HostObjectDeclarer interface {
	HostObjects() []string
}

// Factory makes a backend. Registries and the conformance kit take
// factories so that each user (or each conformance case) gets its own
// instance.
type Factory func() (Backend, error)

// Limits are the bounds a backend enforces on one evaluation.
type Limits struct {
	// WallClock is the longest the script may run, measured from the moment
	// the script starts (engine start-up and input seeding are not charged).
	WallClock time.Duration
	// MemoryBytes is the most memory the script's environment may use.
	MemoryBytes int64
	// MaxOutFiles and MaxOutFileBytes bound the output files of a run
	// (SPI 1.5.0): how many the script may write and their bytes in all.
	// A backend that declares Capabilities.Files stops a script that
	// writes past either with LimitFiles, and never buffers more than
	// they allow. The effect always sets both for such a backend.
	MaxOutFiles     int
	MaxOutFileBytes int64
}

// Request is one evaluation.
type Request struct {
	// Script holds the verified script bytes: source text, or a wasm module.
	// The backend must not modify them.
	Script []byte
	// Input is the caller's input as JSON text, already validated and
	// bounded by the effect.
	Input json.RawMessage
	// Limits are the bounds for this evaluation.
	Limits Limits
	// Host is the broker the script's host calls go through (SPI 1.1), or
	// nil when the call has no host functions. The effect sets it only for
	// a backend that declares Capabilities.HostCalls. See [Host].
	Host Host
	// Files are the run's input files (SPI 1.5.0): names checked by
	// CheckFileName and unique, count and bytes bounded by the effect.
	// The effect sets them only for a backend that declares
	// Capabilities.Files. The backend must not modify them.
	Files []File
	// Logs receives the lines the script logs, when not nil (SPI 1.1.0).
	// A backend that declares Capabilities.Logs writes every line there
	// (see LogSink); the others may ignore it.
	Logs LogSink
}
