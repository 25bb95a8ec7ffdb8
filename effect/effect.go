package effect

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandbank/sandbank/internal/canon"
	"github.com/sandbank/sandbank/spi"
)

// Effect is the only way to use a backend: it owns every guarantee around
// it. It is safe for concurrent use.
type Effect struct {
	scripts ScriptReader
	backend spi.Backend
	caps    spi.Capabilities // frozen copy, validated in New

	limits    spi.Limits // the ceiling, and the default for a call
	maxInput  int64
	maxOutput int64
	maxScript int64
	grace     time.Duration

	maxInFiles     int   // Options.MaxInputFiles, resolved (files.go)
	maxInFileBytes int64 // Options.MaxInputFileBytes, resolved

	maxAbandoned int
	closeTimeout time.Duration
	warmTimeout  time.Duration
	abandoned    atomic.Int64 // backend calls given up on, not yet returned

	shapes shapeCache

	host          HostFuncs // validated copy of Options.Host (hostcall.go)
	maxHostCalls  int
	maxHostArg    int64
	maxHostResult int64
	maxHostConc   int
	rc            recordConfig // the run record's bounds and sinks (record.go)

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// New returns an Effect over backend, reading scripts from scripts. A nil
// opts means defaults. New reads the backend's capabilities once, validates
// them and keeps a frozen copy; it refuses a backend that declares network
// access or reused environments unless the options allow it.
//
// New refuses a nil scripts or backend, negative limits or sizes, a
// negative BackendGrace, and a backend the options do not accept, each
// with a clear error matching ErrInvalidCall (negative limits and sizes:
// ErrInvalidLimits). A backend whose capabilities are invalid, or whose
// Capabilities method panics, is a retryable error: the backend is broken,
// not the call.
func New(scripts ScriptReader, backend spi.Backend, opts *Options) (*Effect, error) {
	if scripts == nil {
		return nil, invalid(ErrInvalidCall, "effect: nil script reader")
	}
	if backend == nil {
		return nil, invalid(ErrInvalidCall, "effect: nil backend")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	e := &Effect{
		scripts:   scripts,
		backend:   backend,
		limits:    o.Limits,
		maxInput:  o.MaxInputBytes,
		maxOutput: o.MaxOutputBytes,
		maxScript: o.MaxScriptBytes,
		grace:     DefaultBackendGrace,

		maxInFiles:     cmp.Or(o.MaxInputFiles, defaultMaxFiles),
		maxInFileBytes: cmp.Or(o.MaxInputFileBytes, defaultMaxFileBytes),

		maxAbandoned: o.MaxAbandoned,
		closeTimeout: o.CloseTimeout,
		warmTimeout:  o.WarmTimeout,
	}
	switch {
	case o.Limits.WallClock < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative wall clock limit")
	case o.Limits.MemoryBytes < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative memory limit")
	case o.MaxInputBytes < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative MaxInputBytes")
	case o.MaxOutputBytes < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative MaxOutputBytes")
	case o.MaxScriptBytes < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative MaxScriptBytes")
	case o.MaxInputFiles < 0 || o.MaxInputFileBytes < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative MaxInputFiles or MaxInputFileBytes")
	case o.Limits.MaxOutFiles < 0 || o.Limits.MaxOutFileBytes < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative MaxOutFiles or MaxOutFileBytes limit")
	case o.BackendGrace != nil && *o.BackendGrace < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative BackendGrace")
	case o.MaxAbandoned < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative MaxAbandoned")
	case o.CloseTimeout < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative CloseTimeout")
	case o.WarmTimeout < 0:
		return nil, invalid(ErrInvalidLimits, "effect: options: negative WarmTimeout")
	}
	if e.maxAbandoned == 0 {
		e.maxAbandoned = defaultMaxAbandoned
	}
	if e.closeTimeout == 0 {
		e.closeTimeout = defaultCloseTimeout
	}
	if e.warmTimeout == 0 {
		e.warmTimeout = defaultWarmTimeout
	}
	if e.limits.WallClock == 0 {
		e.limits.WallClock = DefaultWallClock
	}
	if e.limits.MemoryBytes == 0 {
		e.limits.MemoryBytes = DefaultMemoryBytes
	}
	if e.limits.MaxOutFiles == 0 {
		e.limits.MaxOutFiles = defaultMaxFiles
	}
	if e.limits.MaxOutFileBytes == 0 {
		e.limits.MaxOutFileBytes = defaultMaxFileBytes
	}
	if e.maxInput == 0 {
		e.maxInput = DefaultMaxInputBytes
	}
	if e.maxOutput == 0 {
		e.maxOutput = DefaultMaxOutputBytes
	}
	if e.maxScript == 0 {
		e.maxScript = DefaultMaxScriptBytes
	}
	if o.BackendGrace != nil {
		e.grace = *o.BackendGrace
	}

	if err := e.rc.init(&o, backend); err != nil {
		return nil, err
	}

	caps, err := readCapabilities(backend)
	if err != nil {
		return nil, err
	}
	if n := readScriptBound(backend); n > 0 && n < e.maxScript {
		e.maxScript = n
	}
	if err := caps.Validate(); err != nil {
		return nil, fmt.Errorf("effect: backend capabilities: %w", err)
	}
	if caps.Network != spi.NetworkNone && !o.AllowNetwork {
		return nil, invalid(ErrInvalidCall, "effect: backend declares network "+caps.Network.String()+"; set Options.AllowNetwork to accept it")
	}
	if !caps.FreshPerRun && !o.AllowReusedEnvironment {
		return nil, invalid(ErrInvalidCall, "effect: backend reuses its environment across runs; set Options.AllowReusedEnvironment to accept it")
	}
	caps.Language = boundText(caps.Language)
	e.caps = caps
	if err := e.setHost(&o); err != nil {
		return nil, err
	}
	return e, nil
}

// readCapabilities calls backend.Capabilities once, recovering a panic (a
// typed nil backend, a broken implementation) into an error.
func readCapabilities(backend spi.Backend) (caps spi.Capabilities, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errors.New("effect: backend panicked while reporting its capabilities")
		}
	}()
	return backend.Capabilities(), nil
}

// readScriptBound returns the largest script the backend takes, when it
// is an spi.ScriptSizer, and 0 otherwise or when MaxScriptBytes panics.
func readScriptBound(backend spi.Backend) (n int64) {
	sizer, ok := backend.(spi.ScriptSizer)
	if !ok {
		return 0
	}
	defer func() {
		if recover() != nil {
			n = 0
		}
	}()
	return int64(sizer.MaxScriptBytes())
}

// Capabilities returns the frozen, validated copy of the backend's
// declaration taken at construction. Later changes to the backend's own
// value are not seen.
func (e *Effect) Capabilities() spi.Capabilities { return e.caps }

// Idempotent reports whether a re-run is safe by construction: the backend
// declares no network and a fresh environment per run.
func (e *Effect) Idempotent() bool {
	return e.caps.Network == spi.NetworkNone && e.caps.FreshPerRun
}

// Evaluate runs the script named by call.Script (or carried as
// call.Source) with call.Input, in the order the design gives, and returns
// the result as canonical JSON text:
//
//  1. the call itself is checked: its limits, its shape, and that it names
//     a script (a well-formed Script, a Source, or both); a mistake is an
//     invalid call (ErrInvalidCall and its case's sentinel). Then the input
//     is serialised and bounded (typed inputNotSerializable,
//     inputTooLarge), and the input files checked (names and
//     uniqueness: an invalid call; count and bytes: typed inputTooLarge;
//     files for a backend that does not declare Files: an invalid call),
//     before the script is read or the backend called.
//     While Options.MaxAbandoned earlier calls are abandoned and still
//     running, the call is refused here with ErrOverloaded (retryable);
//  2. the script: a Source is bounded (typed scriptTooLarge), copied and
//     hashed, and must hash to Script when both are set (else
//     ErrInvalidSource); the store is not consulted. Otherwise the script
//     is read by address (not found: typed scriptMissing; bytes that do
//     not hash to the address: untyped) and bounded (typed
//     scriptTooLarge); a reader other than an InstantReader is raced
//     against ctx, like the backend;
//  3. the backend is called with a context cancelled on ctx's cancellation
//     or after the wall clock plus BackendGrace, and raced against both: a
//     backend that does not return loses, a panic becomes an untyped error;
//  4. when ctx is done, ctx.Err() is returned as is, whatever the backend
//     did;
//  5. the output files are checked (past Limits.MaxOutFiles or
//     MaxOutFileBytes: limitExceeded (files); a malformed list, or files
//     on an outcome other than OK: untyped), then the outcome is
//     validated and mapped (OK: a value nested deeper than
//     MaxOutputDepth is limitExceeded (output), checked before the text
//     is parsed; Limit: limitExceeded; Threw: scriptError; InputTooLarge:
//     inputTooLarge with Kind LimitMemory and the memory limit;
//     Infrastructure and anything malformed: untyped);
//  6. a result over MaxOutputBytes is limitExceeded (output);
//  7. a result that does not satisfy call.Shape is shapeMismatch;
//  8. the result is returned as its JSON round trip.
//
// The returned bytes are canonical: compact, object keys sorted, strings
// re-encoded by encoding/json without HTML escaping, numbers kept exactly as
// the backend wrote them (integers past 2^53 stay exact), no trailing
// newline. The same value yields the same bytes on every run. They are a
// fresh copy that the caller owns.
//
// An error is of one of three kinds: a typed failure (a *Failure, the
// script's own outcome), an invalid call (errors.Is(err, ErrInvalidCall),
// the caller's mistake), or infrastructure, retryable (see Retryable). A
// done ctx yields ctx.Err() as is. All text that came from the script, the
// backend or the script reader is bounded to MaxTextUnits UTF-16 units and
// made storable.
//
// Evaluate is [Effect.Run] without the record: the same run, the same
// value and the same error.
func (e *Effect) Evaluate(ctx context.Context, call Call) (json.RawMessage, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if e.observed(call) {
		rec, err := e.run(ctx, call)
		if err != nil {
			return nil, err
		}
		return rec.Value, nil
	}
	out, err := e.evaluate(ctx, call, nil)
	// 4. Cancellation wins over everything, on every path.
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	return out, err
}

// evaluate is Evaluate without the final cancellation check. st, when not
// nil, collects what the run record needs.
func (e *Effect) evaluate(ctx context.Context, call Call, st *runState) (json.RawMessage, error) {
	if e.backend == nil {
		return nil, errNotNew
	}
	if e.closed.Load() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// 1. The call, then the input: before the script or the backend.
	limits, err := e.callLimits(call.Limits)
	if err != nil {
		return nil, err
	}
	st.noteLimits(limits)
	var shape *compiledShape
	if len(call.Shape) > 0 {
		if shape, err = e.shapes.get(call.Shape); err != nil {
			return nil, err
		}
	}
	if call.Source == nil && call.Script == "" {
		return nil, errNoScript
	}
	var addr Address
	if call.Script != "" {
		if addr, err = ParseAddress(string(call.Script)); err != nil {
			return nil, err
		}
	}
	hostFuncs, err := e.hostFuncsFor(call.Host)
	if err != nil {
		return nil, err
	}
	if call.Durable != nil {
		call.Durable = call.Durable.clone() // the caller's may change while the run reads it
		if err := e.checkDurable(call.Durable); err != nil {
			return nil, err
		}
		st.noteDurable(call.Durable)
		if len(call.Durable.Replay) > 0 && hostFuncs == nil {
			return nil, errDurableReplay
		}
	}
	input, err := encodeInput(call.Input)
	if err != nil {
		return nil, err
	}
	st.noteInput(input)
	if int64(len(input)) > e.maxInput {
		return nil, &Failure{Code: CodeInputTooLarge, Kind: LimitInput, Bytes: int64(len(input)), Limit: e.maxInput}
	}
	files, err := e.inputFiles(call.Files)
	if err != nil {
		return nil, err
	}
	var fileRefs []FileRef // the receipt's, and a resumption's check
	if st != nil || call.Durable != nil {
		fileRefs = refsOf(files)
	}
	st.noteInputFiles(fileRefs)

	// Before any goroutine is started for the call: refused while too many
	// earlier ones were abandoned. The cap is checked, not reserved: calls
	// already in flight may still be abandoned past it.
	if e.overloaded() {
		return nil, errOverloaded
	}

	// 2. The script: carried by the call, or read by content address.
	var script []byte
	if call.Source != nil {
		script, err = e.sourceScript(call.Source, addr)
	} else {
		script, err = e.readScript(ctx, addr)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	st.noteScript(addr, script)
	if call.Durable != nil {
		if err := e.checkResumes(call.Durable, AddressOf(script), input, fileRefs); err != nil {
			return nil, err
		}
	}

	// 3 and 4. The backend, raced against ctx and the deadline.
	// Its result is used only when ctx is not done: Evaluate checks.
	req := spi.Request{Script: script, Input: input, Limits: limits, Files: files}
	if hostFuncs != nil {
		req.Host = e.newBroker(hostFuncs, st, call.Durable)
	}
	st.backendBegins(&req)
	out, err := e.callBackend(ctx, req)
	st.backendEnded(out, err)
	// What the broker decided (too many host calls, the wall clock spent
	// in a host call, a host function that panicked) is the run's outcome,
	// whatever the backend reported.
	if b := hostBroker(req); b != nil {
		if v := b.decided(); v != nil {
			return nil, v
		}
		// A script that finished (or threw) before the calls its replay
		// log holds diverged: the original run made them. One a limit
		// stopped ran out, whatever it would have done.
		if err == nil && (out.Kind == spi.KindOK || out.Kind == spi.KindThrew) {
			if v := b.unreplayed(); v != nil {
				return nil, v
			}
		}
	}
	if err != nil {
		return nil, err
	}

	// 5. The output files, then the outcome: files on an outcome other
	// than OK make it malformed.
	outFiles, err := e.outputFiles(out, limits)
	if err != nil {
		return nil, err
	}
	value, err := e.mapOutcome(out, input, limits)
	if err != nil {
		return nil, err
	}
	st.noteOutputFiles(outFiles)

	// 6, 7 and 8. The output bound, the shape, the canonical bytes.
	return e.finish(value, shape)
}

// callLimits resolves a call's limits against the effect's ceiling: zero
// fields take the effect's, negative or higher ones are refused.
// The output files' bounds are set only for a backend that declares Files.
func (e *Effect) callLimits(l spi.Limits) (spi.Limits, error) {
	if l.WallClock < 0 || l.MemoryBytes < 0 || l.MaxOutFiles < 0 || l.MaxOutFileBytes < 0 {
		return spi.Limits{}, errNegativeLimits
	}
	if l.WallClock > e.limits.WallClock || l.MemoryBytes > e.limits.MemoryBytes ||
		l.MaxOutFiles > e.limits.MaxOutFiles || l.MaxOutFileBytes > e.limits.MaxOutFileBytes {
		return spi.Limits{}, errLimitsAboveCeiling
	}
	l.WallClock = cmp.Or(l.WallClock, e.limits.WallClock)
	l.MemoryBytes = cmp.Or(l.MemoryBytes, e.limits.MemoryBytes)
	if e.caps.Files {
		l.MaxOutFiles = cmp.Or(l.MaxOutFiles, e.limits.MaxOutFiles)
		l.MaxOutFileBytes = cmp.Or(l.MaxOutFileBytes, e.limits.MaxOutFileBytes)
	} else {
		l.MaxOutFiles, l.MaxOutFileBytes = 0, 0
	}
	return l, nil
}

// The invalid calls of step 1.
var (
	errNegativeLimits     = invalid(ErrInvalidLimits, "effect: call limits must not be negative")
	errLimitsAboveCeiling = invalid(ErrInvalidLimits, "effect: call limits exceed the effect's ceiling")
	errNoScript           = invalid(ErrInvalidSource, "effect: a call needs a Script address, a Source, or both")
	errSourceMismatch     = invalid(ErrInvalidSource, "effect: the call's Source does not hash to its Script address")
)

// sourceScript bounds, copies and hashes a call's Source; when the call
// also names a Script (addr is not empty), the Source must hash to it.
func (e *Effect) sourceScript(src []byte, addr Address) ([]byte, error) {
	if int64(len(src)) > e.maxScript {
		return nil, &Failure{Code: CodeScriptTooLarge, Bytes: int64(len(src)), Limit: e.maxScript}
	}
	script := append(make([]byte, 0, len(src)), src...)
	if addr != "" && !addr.matches(script) {
		return nil, errSourceMismatch
	}
	return script, nil
}

// encodeInput serialises the caller's input. A json.RawMessage is checked
// and copied; anything else goes through encoding/json. Failures are typed
// inputNotSerializable.
func encodeInput(in any) (b []byte, err error) {
	if raw, ok := in.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, &Failure{Code: CodeInputNotSerializable, Reason: "input is a json.RawMessage that is not valid JSON text"}
		}
		return append([]byte(nil), raw...), nil
	}
	defer func() {
		// A caller's MarshalJSON or MarshalText may panic: bad input is a
		// clear error, never a panic out of Evaluate.
		if r := recover(); r != nil {
			b, err = nil, &Failure{Code: CodeInputNotSerializable, Reason: "input: a marshaler panicked"}
		}
	}()
	b, err = json.Marshal(in)
	if err != nil {
		return nil, &Failure{Code: CodeInputNotSerializable, Reason: boundText(errorText(err))}
	}
	return b, nil
}

// readScript fetches and verifies the script at addr.
func (e *Effect) readScript(ctx context.Context, addr Address) ([]byte, error) {
	var (
		script []byte
		err    error
	)
	if ir, ok := e.scripts.(InstantReader); ok {
		script, err = ir.ReadScript(ctx, addr) // never blocks, never panics
	} else {
		script, err = e.raceRead(ctx, addr)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // Evaluate reports ctx.Err()
		}
		if isNotExist(err) {
			return nil, &Failure{Code: CodeScriptMissing, Script: addr}
		}
		return nil, foreignError("effect: reading script: ", err)
	}
	if int64(len(script)) > e.maxScript {
		return nil, &Failure{Code: CodeScriptTooLarge, Bytes: int64(len(script)), Limit: e.maxScript}
	}
	if !addr.matches(script) {
		return nil, errors.New("effect: script bytes do not match their content address")
	}
	return script, nil
}

// scriptRead is what the goroutine running a script reader hands back.
type scriptRead struct {
	script   []byte
	err      error
	panicked bool
}

// raceRead runs a script reader in its own goroutine and races it against
// ctx, so that a reader that ignores its context cannot hold Evaluate past
// the caller's cancellation. A panic in the reader is recovered.
func (e *Effect) raceRead(ctx context.Context, addr Address) ([]byte, error) {
	ch := make(chan scriptRead, 1)
	j := e.newJob()
	go func() {
		defer j.finish()
		defer func() {
			if r := recover(); r != nil {
				ch <- scriptRead{panicked: true}
			}
		}()
		b, err := e.scripts.ReadScript(ctx, addr)
		ch <- scriptRead{script: b, err: err}
	}()
	select {
	case r := <-ch:
		if r.panicked {
			return nil, errReaderPanicked
		}
		return r.script, r.err
	case <-ctx.Done():
		j.abandon()
		return nil, ctx.Err()
	}
}

var errReaderPanicked = errors.New("effect: script reader panicked")

// isNotExist is errors.Is(err, fs.ErrNotExist), safe against an error
// whose Is method panics.
func isNotExist(err error) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return errors.Is(err, fs.ErrNotExist)
}

// settled is what the goroutine running the backend hands back.
type settled struct {
	out      spi.Outcome
	err      error
	panicked bool
}

// callBackend runs the backend in its own goroutine and races it against
// ctx and the deadline (the call's wall clock plus the grace). The backend's
// context is cancelled on either, and always when callBackend returns. The
// channel is buffered, so a backend that returns late finishes its
// goroutine without a reader.
func (e *Effect) callBackend(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	d := saturatingAdd(req.Limits.WallClock, e.grace)
	bctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// The job counts the call as abandoned while the backend's goroutine,
	// or a host function of the run, is still inside it once the effect
	// stops waiting: on either path below, since a backend may return and
	// leave a host function running on a goroutine of its own.
	j := e.newJob()
	defer j.abandon()
	hb := hostBroker(req)
	if hb != nil {
		hb.arm(bctx, cancel, req.Limits.WallClock, j)
		defer hb.end() // the run is over when the effect stops waiting
	}

	ch := make(chan settled, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				if hb != nil {
					hb.end()
				}
				j.finish()
				ch <- settled{panicked: true, err: panicError(r)}
			}
		}()
		out, err := e.backend.Evaluate(bctx, req)
		if hb != nil {
			hb.end() // no call is delivered once Evaluate returned
		}
		j.finish() // before the hand-off: a call that returned is never counted
		ch <- settled{out: out, err: err}
	}()

	// When ctx is done, whatever happens here, Evaluate returns ctx.Err():
	// it checks once, on every path, after this returns.
	select {
	case s := <-ch:
		if s.panicked {
			return spi.Outcome{}, s.err
		}
		if s.err != nil {
			return spi.Outcome{}, foreignError("effect: backend failed: ", s.err)
		}
		return s.out, nil
	case <-bctx.Done():
		return spi.Outcome{}, &untypedError{msg: "effect: backend did not settle within " + d.String()}
	}
}

var errBackendPanicked = errors.New("effect: backend panicked")

// panicError reports a recovered backend panic, untyped, with the panic
// value's text bounded (the value itself is not kept: it may be a typed
// failure).
func panicError(r any) (err error) {
	defer func() {
		if recover() != nil {
			err = errBackendPanicked
		}
	}()
	return &untypedError{msg: "effect: backend panicked: " + boundText(fmt.Sprint(r))}
}

// saturatingAdd returns a+b for non-negative durations, capped at the
// largest duration.
func saturatingAdd(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mapOutcome validates a backend's outcome and maps it: the value for OK,
// a typed failure for what the script did, an untyped error for anything
// else. Every field is read once, into locals.
func (e *Effect) mapOutcome(out spi.Outcome, input []byte, limits spi.Limits) ([]byte, error) {
	switch out.Kind {
	case spi.KindOK:
		v := out.Value
		// The depth first: json.Valid refuses text nested past its own
		// limit, which would make a deep result an untyped error.
		if tooDeep(v, MaxOutputDepth) {
			return nil, outputTooDeep()
		}
		if len(v) == 0 || !json.Valid(v) {
			return nil, errors.New("effect: backend returned an OK outcome without a valid JSON value")
		}
		return v, nil
	case spi.KindLimit:
		k, ok := LimitKindOf(out.Limit)
		if !ok {
			return nil, errors.New("effect: backend returned a limit outcome with an invalid limit kind " + strconv.Itoa(int(out.Limit)))
		}
		return nil, &Failure{Code: CodeLimitExceeded, Kind: k}
	case spi.KindThrew:
		return nil, &Failure{Code: CodeScriptError, Name: boundText(out.Name), Message: boundText(out.Message)}
	case spi.KindInputTooLarge:
		return nil, &Failure{Code: CodeInputTooLarge, Kind: LimitMemory, Bytes: int64(len(input)), Limit: limits.MemoryBytes}
	case spi.KindInfrastructure:
		return nil, &untypedError{msg: "effect: backend infrastructure failure: " + boundText(out.Message)}
	default:
		return nil, errors.New("effect: backend returned an invalid outcome kind " + strconv.Itoa(int(out.Kind)))
	}
}

// finish bounds the value, checks its shape and returns its canonical
// bytes.
func (e *Effect) finish(value []byte, shape *compiledShape) (json.RawMessage, error) {
	// Refuse a plainly oversized value before decoding it: its compact
	// size is computed without allocating.
	if int64(len(value)) > e.maxOutput && canon.CompactLen(value) > e.maxOutput {
		return nil, &Failure{Code: CodeLimitExceeded, Kind: LimitOutput}
	}
	text, err := canon.Canonical(value)
	if err != nil {
		return nil, err
	}
	if int64(len(text)) > e.maxOutput {
		return nil, &Failure{Code: CodeLimitExceeded, Kind: LimitOutput}
	}
	if shape != nil {
		v, err := canon.Decode(text)
		if err != nil {
			return nil, err
		}
		if err := shape.validate(v); err != nil {
			return nil, err
		}
	}
	return text, nil
}

// Warm asks the backend to prepare, when it implements spi.Warmer; it
// returns nil at once otherwise. Warm is raced against ctx and against its
// own deadline, Options.WarmTimeout (default 60 s): past it
// Warm returns a retryable error and leaves the backend's Warm running,
// counted in Abandoned. A panic is recovered and error text is bounded.
func (e *Effect) Warm(ctx context.Context) error {
	if ctx == nil {
		return errNilContext
	}
	if e.backend == nil {
		return errNotNew
	}
	if e.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w, ok := e.backend.(spi.Warmer)
	if !ok {
		return nil
	}
	if e.overloaded() {
		return errOverloaded
	}
	wctx, cancel := context.WithTimeout(ctx, e.warmTimeout)
	defer cancel()
	err, returned := e.runBounded(wctx, 0, func() error { return w.Warm(wctx) })
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	switch {
	case !returned || wctx.Err() != nil:
		// Past the deadline, whether the backend returned its context's
		// error or did not return at all.
		return &untypedError{msg: "effect: backend warm-up did not finish within " + e.warmTimeout.String()}
	case err == errBackendPanicked:
		return err
	case err != nil:
		return foreignError("effect: backend warm-up failed: ", err)
	}
	return nil
}

// Close closes the backend when it is an io.Closer, once; later calls
// return the first call's result. Evaluate and Warm after Close fail with
// ErrClosed. Close does not wait for evaluations in flight (a backend that
// never returns cannot be waited for): a backend must tolerate Close while
// an Evaluate is running. Close waits for the backend's Close at most
// Options.CloseTimeout (default 30 s); past it, Close
// returns a retryable error and leaves the backend's Close running,
// counted in Abandoned.
func (e *Effect) Close() error {
	e.closeOnce.Do(func() {
		e.closed.Store(true)
		c, ok := e.backend.(io.Closer)
		if !ok {
			return
		}
		err, returned := e.runBounded(context.Background(), e.closeTimeout, c.Close)
		switch {
		case !returned:
			e.closeErr = &untypedError{msg: "effect: closing backend did not finish within " + e.closeTimeout.String()}
		case err == errBackendPanicked:
			e.closeErr = err
		case err != nil:
			e.closeErr = foreignError("effect: closing backend: ", err)
		}
	})
	return e.closeErr
}
