package temporal

import (
	"encoding/json"
	"fmt"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
)

// ActivityName is the name the activity is registered under, and the name a
// workflow schedules it by.
const ActivityName = "sandbank.Run"

// Request is the activity's input: one run of one script.
//
// It names the script by content address and carries its bytes, so a worker
// needs no shared store: the worker's effect checks that Source hashes to
// Script before anything runs (a mismatch is TypeInvalidCall, never a run
// of other code). A request with no Source is read by address from the
// worker's Options.Scripts.
type Request struct {
	// Script is the script's content address ("sha256:<64 hex>").
	Script record.Address `json:"script"`
	// Source is the script itself.
	Source []byte `json:"source,omitempty"`
	// Engine names the engine to run it on, such as "quickjs" or
	// "starlark". When empty, Language chooses.
	Engine string `json:"engine,omitempty"`
	// Language chooses the engine when Engine is empty: the registry's
	// default engine of the language when the worker runs it, else the
	// first engine of the language the worker runs, in name order. When
	// both are set, Engine must run Language.
	Language string `json:"language,omitempty"`
	// Input is the script's input as JSON text; empty means null.
	Input json.RawMessage `json:"input,omitempty"`
	// Limits may tighten the worker's limits for this run; zero fields
	// mean the worker's (see effect.Call.Limits).
	Limits spi.Limits `json:"limits"`
	// Shape is an optional JSON Schema the result must satisfy.
	Shape json.RawMessage `json:"shape,omitempty"`
	// Files are input files carried in the payload, within the payload
	// limit (see files.go). StoredFiles are input files too large for
	// it, named by content address: the worker reads each from
	// Options.Scripts, checked against its digest and size, and hands
	// the script both lists as one.
	Files       []spi.File       `json:"files,omitempty"`
	StoredFiles []record.FileRef `json:"storedFiles,omitempty"`
}

// NewRequest returns a request for source with input, addressed by its
// content. Set Engine or Language on it before use. An input that
// encoding/json cannot marshal is an error.
func NewRequest(source []byte, input any) (Request, error) {
	in, err := json.Marshal(input)
	if err != nil {
		return Request{}, fmt.Errorf("sandbank/temporal: input not serializable: %w", err)
	}
	src := append([]byte{}, source...)
	return Request{Script: record.AddressOf(src), Source: src, Input: in}, nil
}

// call returns the effect call of r.
func (r Request) call() effect.Call {
	c := effect.Call{Script: r.Script, Source: r.Source, Limits: r.Limits, Shape: r.Shape}
	if len(r.Input) > 0 {
		c.Input = r.Input
	}
	return c
}
