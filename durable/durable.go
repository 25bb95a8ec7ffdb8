package durable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/spi"
)

// The bounds of a durable run.
const (
	// MaxSuspensions bounds how often one durable run suspends, all its
	// segments counted: the next Suspend ends it limitExceeded
	// (effect.LimitSuspensions). Each resumption replays every call
	// before it, so the bound also bounds the work replays repeat.
	MaxSuspensions = 64
	// MaxLogBytes bounds the bytes of arguments and answers a durable
	// run's host-call log holds, every segment's replayed calls included:
	// past it the run ends limitExceeded (effect.LimitHostLog). 16 MiB.
	MaxLogBytes = 16 << 20
	// MaxContinuationBytes bounds the encoded continuation Decode reads:
	// its log (at most MaxLogBytes, JSON-escaped at most six times over),
	// its input (the effect's default input ceiling) and its script
	// (the effect's default script ceiling), with room for the rest.
	MaxContinuationBytes = 6*MaxLogBytes + effect.DefaultMaxInputBytes + 2*effect.DefaultMaxScriptBytes + 1<<20
)

// Format names the continuation's encoding; it changes only if a field
// changes meaning.
const Format = "sandbank.continuation/1"

// Continuation is a suspended durable run: all a process with the same
// engine needs to resume it. It is plain data: Encode writes it as
// canonical JSON, Decode reads it back.
type Continuation struct {
	// Format is Format.
	Format string `json:"format"`
	// Receipt is the suspended run's receipt: the script's address, the
	// input's digest, the input files' references (not their bytes: a
	// resumption is handed the files again), the engine, its backend's
	// version, the SPI version, the capabilities and limits, the digest
	// of HostCalls
	// (Receipt.HostLog), the suspensions before it; signed by the
	// effect's Signer when it has one. Its signature covers every other
	// field of the continuation through these digests.
	Receipt effect.Receipt `json:"receipt"`
	// Failure is the suspension (effect.CodeSuspended), with the host
	// function's reason; Receipt.OutputDigest is its digest.
	Failure *effect.Failure `json:"failure"`
	// Input is the run's input, canonical JSON text (Receipt.InputDigest
	// is its digest).
	Input json.RawMessage `json:"input"`
	// HostCalls are the run's host calls in the order the script issued
	// them, as its record lists them without their times: the log (each
	// call's name, arguments, outcome, and answer or error) and the
	// pending call, the one line whose outcome is
	// effect.HostCallSuspended.
	HostCalls []effect.HostCall `json:"hostCalls"`
	// Source is the script, when the run carried it (effect.Call.Source);
	// else the resuming effect reads it by Receipt.Script.
	Source []byte `json:"source,omitempty"`
}

// ErrInvalidContinuation is matched (with errors.Is) by the refusal of a
// continuation that does not agree with itself or whose signature does
// not verify, and of a call Run or Resume cannot make durable. It matches
// effect.ErrInvalidCall: the caller's invalid request, never retryable.
var ErrInvalidContinuation error = &invalidError{"durable: invalid continuation"}

// invalidError is a refusal: it matches effect.ErrInvalidCall.
type invalidError struct{ msg string }

func (e *invalidError) Error() string { return e.msg }
func (e *invalidError) Unwrap() error { return effect.ErrInvalidCall }

// refusal is one refusal's text; it matches ErrInvalidContinuation.
type refusal struct{ msg string }

func (e *refusal) Error() string { return "durable: " + e.msg }
func (e *refusal) Unwrap() error { return ErrInvalidContinuation }

// Options are Resume's options; nil means defaults.
type Options struct {
	// Keys, when set, are the keys a continuation's receipt must be
	// signed by: an unsigned continuation, or one signed by another key,
	// is refused. Nil (the default) checks no signature.
	Keys *receipt.KeySet
}

// Run runs call durably on eff: exactly as eff.Run does, but a host
// function may answer effect.Suspend. Then the error is the typed failure
// effect.CodeSuspended and the continuation is returned beside the
// record; it is nil otherwise. call.Durable must be nil: Run sets it.
// An engine that does not declare spi.Capabilities.Deterministic is
// refused (effect.ErrInvalidHost).
func Run(ctx context.Context, eff *effect.Effect, call effect.Call) (*effect.Record, *Continuation, error) {
	if call.Durable != nil {
		return nil, nil, &refusal{"Run sets the call's Durable itself"}
	}
	call.Durable = &effect.Durable{MaxSuspensions: MaxSuspensions, MaxLogBytes: MaxLogBytes}
	return run(ctx, eff, call)
}

// Resume continues the suspended run cont on eff: it replays the script
// from the start, the logged host calls answered from cont's log (each
// checked: else effect.CodeReplayDiverged), the pending call with answer
// (JSON text), then live. call gives the host functions, the events and,
// when cont does not carry it and eff's store does not hold it, the
// script (Source); its Script, Input, Limits and Durable must be unset:
// they come from cont. A run with input files is resumed with the same
// files in call.Files: cont holds only their references
// (Receipt.InputFiles), and the effect refuses other files
// (effect.ErrInvalidHost). The run may suspend again (a new continuation),
// up to MaxSuspensions. cont is refused (ErrInvalidContinuation) when it
// does not agree with itself or its signature does not verify against
// opts.Keys, and by the effect (effect.ErrInvalidHost) when it suspended
// another script, input or engine than the call's and eff's.
func Resume(ctx context.Context, eff *effect.Effect, cont *Continuation, answer json.RawMessage, call effect.Call, opts *Options) (*effect.Record, *Continuation, error) {
	if opts == nil {
		opts = &Options{}
	}
	if cont == nil {
		return nil, nil, &refusal{"no continuation"}
	}
	if call.Script != "" || call.Input != nil || call.Limits != (spi.Limits{}) || call.Durable != nil {
		return nil, nil, &refusal{"Resume takes the call's script, input, limits and Durable from the continuation"}
	}
	pending, err := cont.check(opts)
	if err != nil {
		return nil, nil, err
	}
	text, err := canon.Canonical(answer)
	if err != nil {
		return nil, nil, &refusal{"the answer is not JSON text"}
	}
	replay := make([]effect.HostCall, pending+1)
	for i, c := range cont.HostCalls[:pending] {
		replay[i] = logLine(c)
	}
	replay[pending] = effect.HostCall{Name: cont.HostCalls[pending].Name, Args: cont.HostCalls[pending].Args,
		Outcome: effect.HostCallOK, Answer: text}
	r := cont.Receipt
	call.Script, call.Input = r.Script, cont.Input
	call.Limits = spi.Limits{WallClock: r.Limits.WallClock, MemoryBytes: r.Limits.MemoryBytes,
		MaxOutFiles: r.Limits.MaxOutFiles, MaxOutFileBytes: r.Limits.MaxOutFileBytes}
	if call.Source == nil {
		call.Source = cont.Source
	}
	call.Durable = &effect.Durable{Replay: replay, Resumes: &r, MaxSuspensions: MaxSuspensions, MaxLogBytes: MaxLogBytes}
	return run(ctx, eff, call)
}

// run runs a durable call and makes the continuation of a suspension.
func run(ctx context.Context, eff *effect.Effect, call effect.Call) (*effect.Record, *Continuation, error) {
	rec, err := eff.Run(ctx, call)
	if rec == nil || !errors.Is(err, effect.ErrSuspended) {
		return rec, nil, err
	}
	input, ierr := inputText(call.Input)
	if ierr != nil {
		return rec, nil, ierr // the effect encoded it: cannot happen
	}
	cont := &Continuation{Format: Format, Receipt: rec.Receipt, Failure: rec.Failure, Input: input, Source: call.Source}
	cont.HostCalls = make([]effect.HostCall, len(rec.HostCalls))
	for i, c := range rec.HostCalls {
		cont.HostCalls[i] = logLine(c)
	}
	return rec, cont, err
}

// logLine is a record's host-call line without its times and sizes: what
// the log digest covers.
func logLine(c effect.HostCall) effect.HostCall {
	return effect.HostCall{Name: c.Name, Args: c.Args, Outcome: c.Outcome, Answer: c.Answer, Error: c.Error}
}

// inputText is a call's input as canonical JSON text.
func inputText(in any) (json.RawMessage, error) {
	raw, ok := in.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return canon.Canonical(raw)
}

// Pending returns the call the run waits at: its host function's name and
// the arguments the script passed. It reports false for a continuation
// without one (see Decode).
func (c *Continuation) Pending() (name string, args json.RawMessage, ok bool) {
	for _, l := range c.HostCalls {
		if l.Outcome == effect.HostCallSuspended {
			return l.Name, l.Args, true
		}
	}
	return "", nil, false
}

// check verifies that c agrees with itself and, with opts.Keys, that its
// receipt's signature holds; it returns the index of the pending call.
// What the continuation must agree with outside itself (the script, the
// engine) the effect checks.
func (c *Continuation) check(opts *Options) (int, error) {
	r := c.Receipt
	switch {
	case c.Format != Format:
		return 0, &refusal{"the continuation's format is not " + Format}
	case r.Outcome != effect.CodeSuspended.String() || c.Failure == nil || c.Failure.Code != effect.CodeSuspended:
		return 0, &refusal{"the continuation is not of a suspended run"}
	}
	if d, err := canon.DigestJSON(c.Failure); err != nil || d != r.OutputDigest {
		return 0, &refusal{"the continuation's suspension does not have its receipt's digest"}
	}
	if d, err := effect.HostLogDigest(c.HostCalls); err != nil || d != r.HostLog {
		return 0, &refusal{"the continuation's host-call log does not have its receipt's digest"}
	}
	if r.InputDigest == "" || canon.Digest(c.Input) != r.InputDigest {
		return 0, &refusal{"the continuation's input does not have its receipt's digest"}
	}
	if c.Source != nil && effect.AddressOf(c.Source) != r.Script {
		return 0, &refusal{"the continuation's script does not have its receipt's address"}
	}
	pending, n := -1, 0
	for i, l := range c.HostCalls {
		if l.Outcome == effect.HostCallSuspended {
			pending, n = i, n+1
		}
	}
	if n != 1 {
		return 0, &refusal{"the continuation has no single pending call"}
	}
	if opts.Keys != nil {
		if err := receipt.VerifySignature(r, receipt.WithKeys(opts.Keys), receipt.RequireSignature()); err != nil {
			return 0, errors.Join(&refusal{"the continuation's signature does not verify"}, err)
		}
	}
	return pending, nil
}

// Encode returns c as canonical JSON text (compact, keys sorted): equal
// continuations give equal bytes.
func (c *Continuation) Encode() ([]byte, error) { return canon.JSON(c) }

// Decode reads an encoded continuation, at most MaxContinuationBytes,
// strictly: JSON that reads two ways (a key twice), an unknown field or
// trailing text is refused (ErrInvalidContinuation). It checks the
// encoding only; Resume checks the continuation.
func Decode(b []byte) (*Continuation, error) {
	if int64(len(b)) > MaxContinuationBytes {
		return nil, &refusal{"the continuation is over MaxContinuationBytes"}
	}
	if _, err := canon.Strict(b); err != nil {
		return nil, &refusal{"the continuation is not JSON text that reads one way"}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Continuation
	if err := dec.Decode(&c); err != nil {
		return nil, &refusal{"the continuation does not decode"}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &refusal{"the continuation has text after it"}
	}
	return &c, nil
}
