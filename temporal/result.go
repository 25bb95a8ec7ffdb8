package temporal

import (
	"context"
	"encoding/json"

	"github.com/sandbank/sandbank/effect"
)

// Result is what a run that produced a value returns to the workflow: the
// value as canonical JSON text, and what ran it.
type Result struct {
	// Value is the script's result, canonical JSON text (see
	// effect.Effect.Evaluate).
	Value json.RawMessage `json:"value"`
	// Script is the content address of the script that ran.
	Script effect.Address `json:"script"`
	// Engine is the engine that ran it.
	Engine string `json:"engine"`
	// Attempt is the activity attempt that produced the result, from 1.
	Attempt int32 `json:"attempt"`
}

// run is the one place the activity calls the effect: it runs call on eff and
// returns the result, or the effect's error as is (a *effect.Failure, an
// invalid call, infrastructure or the context's error).
func run(ctx context.Context, eff *effect.Effect, engine string, call effect.Call) (*Result, error) {
	value, err := eff.Evaluate(ctx, call)
	if err != nil {
		return nil, err
	}
	return &Result{Value: value, Script: call.Script, Engine: engine}, nil
}
