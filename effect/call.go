package effect

import (
	"encoding/json"

	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// Call is one evaluation request. It names the script by Script, carries it
// as Source, or both.
type Call struct {
	// Script is the content address of the script ("sha256:<64 hex>"),
	// read from the effect's ScriptReader when Source is nil.
	Script record.Address
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
	// Files are the run's input files (see docs/design.md, "Files"): each
	// name checked by spi.CheckFileName and unique, their count and bytes
	// bounded by Options.MaxInputFiles and MaxInputFileBytes. A call with
	// files on a backend that does not declare spi.Capabilities.Files is
	// refused with ErrInvalidCall before the backend is called. Each
	// file's digest is in the receipt (Receipt.InputFiles).
	Files []spi.File
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
	// Durable, when not nil, makes the run durable: see Durable. A
	// durable call on a backend that does not declare
	// spi.Capabilities.Deterministic is refused with ErrInvalidHost.
	Durable *Durable
}
