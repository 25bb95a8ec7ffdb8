package effect

// This file is what the effect owns of durable runs (docs/design.md,
// "Durable runs"): the Suspend answer, the replay of a log of answers, and
// the bounds of both. The continuation, its encoding and its signature
// are package durable's.

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/spi"
)

// Durable makes a run durable. Its host calls' arguments and answers are
// kept in its record (HostCall.Args and HostCall.Answer, in the order the
// script issued the calls); a host function may end it suspended by
// returning Suspend; and its first host calls may be answered from a log
// instead of by the host functions (a resumption replays the run from the
// start). Package durable builds it from a continuation; most callers use
// that package.
type Durable struct {
	// Replay answers the run's first len(Replay) host calls, in the order
	// the script issues them. Each call is checked against its entry: the
	// same name and the same arguments (compared in canonical JSON form),
	// else the run ends replayDiverged at that call and the script gets
	// no answer. An entry whose Outcome is HostCallOK gives its Answer,
	// one whose Outcome is HostCallError throws its Error; any other
	// entry (a call the log holds no answer for) runs the host function
	// live, once checked. A run that ends having issued fewer calls than
	// Replay holds ends replayDiverged too.
	Replay []HostCall
	// Resumes is the receipt of the suspended run this one resumes; nil
	// for a first run. The call is refused (ErrInvalidHost) unless its
	// outcome is suspended and its engine, backend, SPI version and
	// capabilities are this effect's, its script the call's, its
	// input digest the call's input's and its input files (Receipt.InputFiles)
	// the call's Files'. This run's receipt names it
	// (Receipt.Previous, its digest) and counts its suspensions
	// (Receipt.Suspensions: one more than it).
	Resumes *Receipt
	// MaxSuspensions bounds the suspensions of a durable run, all its
	// segments counted: a host function's Suspend when the run has
	// suspended MaxSuspensions times ends it limitExceeded
	// (LimitSuspensions). It must be positive.
	MaxSuspensions int
	// MaxLogBytes bounds the bytes of arguments and answers the run's log
	// holds, the replayed ones included: past it the run ends
	// limitExceeded (LimitHostLog). It must be positive.
	MaxLogBytes int64
}

// suspension is the error Suspend returns.
type suspension struct{ reason string }

func (s *suspension) Error() string { return "effect: suspend: " + s.reason }

// Suspend returns the error a host function returns to answer "not yet":
// the run ends with the typed failure CodeSuspended, whose Reason is
// reason (bounded), and the call is its record's HostCallSuspended line.
// Only a durable run may suspend (Call.Durable); in any other run the
// answer ends the run with an invalid call (ErrInvalidHost). The host
// decides a suspension: nothing the script does can end a run suspended.
func Suspend(reason string) error { return &suspension{reason: boundText(reason)} }

// The invalid durable calls, and the texts a durable run's script may see.
var (
	errSuspendNotDurable  = invalid(ErrInvalidHost, "effect: a host function answered Suspend in a run that is not durable (Call.Durable)")
	errDurableNotDetermin = invalid(ErrInvalidHost, "effect: a durable call needs a backend that declares Deterministic")
	errDurableBounds      = invalid(ErrInvalidHost, "effect: a durable call needs positive MaxSuspensions and MaxLogBytes")
	errDurableResumes     = invalid(ErrInvalidHost, "effect: a durable call resumes a run that did not suspend, or that ran another script, input, input files, engine, backend, SPI version or capabilities")
	errDurableReplay      = invalid(ErrInvalidHost, "effect: a durable call's replay log holds an entry with an invalid name, outcome or JSON text, one over MaxHostArgBytes or MaxHostResultBytes, or more entries than MaxHostCalls")
	errHostSuspended      = &hostError{"effect: the run was suspended at a host call"}
	errHostDiverged       = &hostError{"effect: the host call is not the one the replay log holds"}
)

// checkDurable validates a durable call against the backend and the
// effect's host bounds.
func (e *Effect) checkDurable(d *Durable) error {
	if !e.caps.Deterministic {
		return errDurableNotDetermin
	}
	if d.MaxSuspensions <= 0 || d.MaxLogBytes <= 0 {
		return errDurableBounds
	}
	if len(d.Replay) > e.maxHostCalls {
		return errDurableReplay
	}
	for _, c := range d.Replay {
		switch {
		case !validHostName(c.Name), !c.Outcome.Valid(), !json.Valid(c.Args),
			int64(len(c.Args)) > e.maxHostArg, int64(len(c.Answer)) > e.maxHostResult,
			c.Outcome == HostCallOK && !json.Valid(c.Answer):
			return errDurableReplay
		}
	}
	return nil
}

// logged counts n more bytes in a durable run's log, deciding the run
// limitExceeded (LimitHostLog) when they overflow it; it reports whether
// they fit.
func (b *broker) logged(n int) bool {
	if b.dur == nil {
		return true
	}
	b.mu.Lock()
	b.logBytes += int64(n)
	over := b.logBytes > b.dur.MaxLogBytes
	b.mu.Unlock()
	if over {
		b.decide(&Failure{Code: CodeLimitExceeded, Kind: LimitHostLog, Limit: b.dur.MaxLogBytes})
	}
	return !over
}

// replay answers call n (from 1) of a durable run from its log, after
// checking it against the log's entry; it reports false when the entry
// holds no answer and the call is to run live.
func (b *broker) replay(c *hostCall, n int) bool {
	want := b.dur.Replay[n-1]
	if want.Name != c.name || !sameJSON(want.Args, c.arg) {
		b.decide(&Failure{Code: CodeReplayDiverged, Reason: "host call " + strconv.Itoa(n) + " is " + quoteName(c.name) +
			" with these arguments, the log holds " + quoteName(want.Name) + " with its own"})
		c.ended(0, errHostDiverged, HostCallCanceled)
		c.done(nil, errHostDiverged)
		return true
	}
	switch want.Outcome {
	case HostCallOK:
		if !b.logged(len(want.Answer)) {
			c.ended(0, errHostRunEnded, HostCallCanceled)
			c.done(nil, errHostRunEnded)
			return true
		}
		answer := append(json.RawMessage(nil), want.Answer...)
		c.rec.keep(nil, answer)
		c.ended(int64(len(answer)), nil, HostCallOK)
		c.done(answer, nil)
	case HostCallError:
		err := &hostError{boundText(want.Error)}
		c.ended(0, err, HostCallError)
		c.done(nil, err)
	default:
		return false
	}
	return true
}

// sameJSON reports whether a and b are the same JSON value: equal in
// canonical form.
func sameJSON(a, b json.RawMessage) bool {
	ca, err := canon.Canonical(a)
	if err != nil {
		return false
	}
	cb, err := canon.Canonical(b)
	return err == nil && bytes.Equal(ca, cb)
}

// suspend is a host function's Suspend answer to call c: it decides the
// run's outcome (suspended, or the bound on suspensions, or an invalid
// call outside a durable run) and returns the error the script is given
// (it never runs on: the backend's context is cancelled).
func (b *broker) suspend(c *hostCall, s *suspension) error {
	var verdict error
	switch {
	case b.dur == nil:
		verdict = errSuspendNotDurable
	case b.dur.suspensions() >= b.dur.MaxSuspensions:
		verdict = &Failure{Code: CodeLimitExceeded, Kind: LimitSuspensions, Limit: int64(b.dur.MaxSuspensions)}
	default:
		verdict = &Failure{Code: CodeSuspended, Reason: s.reason}
	}
	// The call's line is complete before the backend is cancelled: the
	// record is sealed as soon as the backend returns.
	won, stop := b.settle(verdict)
	o := HostCallCanceled
	if f, ok := verdict.(*Failure); won && ok && f.Code == CodeSuspended {
		o = HostCallSuspended
	}
	c.ended(0, errHostSuspended, o)
	stop()
	return errHostSuspended
}

// asSuspension returns the Suspend answer in err's chain, or nil.
func asSuspension(err error) *suspension {
	var s *suspension
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// unreplayed is a durable run's divergence when its script issued fewer
// host calls than its replay log holds, or nil.
func (b *broker) unreplayed() error {
	if b.dur == nil {
		return nil
	}
	b.mu.Lock()
	n := b.accepted
	b.mu.Unlock()
	if n >= len(b.dur.Replay) {
		return nil
	}
	return &Failure{Code: CodeReplayDiverged, Reason: "the script made " + strconv.Itoa(n) + " host calls, the log holds " + strconv.Itoa(len(b.dur.Replay))}
}

// replaying reports whether the next call a durable run accepts is one its
// log answers.
func (b *broker) replaying() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted < len(b.dur.Replay)
}

// HostLogDigest returns the digest a durable run's receipt records of its
// host-call log (Receipt.HostLog): "sha256:<hex>" of the canonical JSON
// text of the calls' names, arguments, outcomes, answers and errors, in
// order (their times left out: they differ between runs).
func HostLogDigest(calls []HostCall) (string, error) {
	type line struct {
		Name    string          `json:"name"`
		Args    json.RawMessage `json:"args,omitempty"`
		Outcome HostCallOutcome `json:"outcome"`
		Answer  json.RawMessage `json:"answer,omitempty"`
		Error   string          `json:"error,omitempty"`
	}
	lines := make([]line, len(calls))
	for i, c := range calls {
		lines[i] = line{Name: c.Name, Args: c.Args, Outcome: c.Outcome, Answer: c.Answer, Error: c.Error}
	}
	return canon.DigestJSON(lines)
}

// suspensions is how often the run suspended before this segment.
func (d *Durable) suspensions() int {
	if d.Resumes == nil {
		return 0
	}
	return d.Resumes.Suspensions + 1
}

// checkResumes refuses a durable call whose Resumes is not a suspension
// of this script, input and input files (their references: names,
// digests, sizes) on this engine.
func (e *Effect) checkResumes(d *Durable, addr Address, input []byte, files []FileRef) error {
	r := d.Resumes
	if r == nil {
		return nil
	}
	if r.Outcome != CodeSuspended.String() || r.Engine != e.rc.engine || r.Backend != e.rc.module ||
		r.SPIVersion != spi.Version || r.Capabilities != e.caps || r.Script != addr ||
		r.InputDigest == "" || r.InputDigest != inputDigest(input) || r.Suspensions < 0 ||
		!slices.Equal(r.InputFiles, files) {
		return errDurableResumes
	}
	if _, err := r.Digest(); err != nil {
		return errDurableResumes
	}
	return nil
}

// clone returns a copy of d that shares nothing with it.
func (d *Durable) clone() *Durable {
	c := *d
	c.Replay = make([]HostCall, len(d.Replay))
	for i, h := range d.Replay {
		h.Args = bytes.Clone(h.Args)
		h.Answer = bytes.Clone(h.Answer)
		c.Replay[i] = h
	}
	if d.Resumes != nil {
		r := *d.Resumes
		if r.Signature != nil {
			sig := *r.Signature
			sig.Value = bytes.Clone(sig.Value)
			r.Signature = &sig
		}
		c.Resumes = &r
	}
	return &c
}
