package durable

import (
	"context"
	"encoding/json"

	"github.com/sandbank/sandbank/effect"
)

// Segment is one segment of a durable run as a door runs it: the first
// one (From nil), or the resumption of From with Answer, checked as
// Options say. Every door (the command line, HTTP, MCP) runs its
// segments through it, so that none re-implements the choice.
type Segment struct {
	// From is the continuation the segment resumes; nil for a first
	// segment.
	From *Continuation
	// Answer is the suspended host call's answer (JSON text), when From
	// is set.
	Answer json.RawMessage
	// Options check From (trusted keys); nil means the defaults.
	Options *Options
}

// Run runs the segment's script on eff with call: [Run] for a first
// segment, [Resume] otherwise. Its results are theirs.
func (s Segment) Run(ctx context.Context, eff *effect.Effect, call effect.Call) (*effect.Record, *Continuation, error) {
	if s.From == nil {
		return Run(ctx, eff, call)
	}
	return Resume(ctx, eff, s.From, s.Answer, call, s.Options)
}

// Suspending returns host functions, one for each of names, that each
// suspend the run with reason: how a door lets its caller name the host
// calls that wait for an answer given later (HTTP's "suspend", the
// command line's and MCP's --suspend). The functions do nothing else.
func Suspending(names []string, reason string) effect.HostFuncs {
	fns := make(effect.HostFuncs, len(names))
	for _, name := range names {
		fns[name] = func(context.Context, json.RawMessage) (any, error) {
			return nil, effect.Suspend(reason)
		}
	}
	return fns
}
