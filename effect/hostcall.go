package effect

// This file is the host-call broker (SPI 1.1): a script asks its host for
// data mid-run through spi.Request.Host, and the effect owns every rule of
// it. The backend only relays: it hands the broker a name and JSON text,
// and throws whatever error comes back into the script.

import (
	"cmp"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/sandbank/sandbank/spi"
)

// HostFunc is a function a script may call on its host while it runs.
//
// args is the script's one argument as JSON text ("null" when it passed
// none), valid and at most MaxHostArgBytes long. The result is marshalled
// with encoding/json (a json.RawMessage is taken as is once validated) and
// must be at most MaxHostResultBytes long; the script receives it decoded.
// A non-nil error is thrown into the script as an Error whose message is
// the error's text, bounded and made storable: the script may catch it,
// and uncaught it ends the run as scriptError.
//
// ctx is the run's: it is done when the caller cancels, when the run ends
// (the backend returned, or the effect stopped waiting for it) and when the
// run's wall clock, counted from when the backend was called, runs out. A
// host function still running then is not waited for: the run ends with
// limitExceeded (wallClock) or the caller's context error. One that
// ignores its context is counted in Abandoned until it returns (and its
// run's backend call with it, once), on every engine: whether the
// backend's Evaluate is stuck with it or returned and left it running.
//
// A panic is recovered and fails the run with an untyped, retryable error
// (the host's fault, not the script's), as does a result encoding/json
// cannot marshal. The host functions of one run may be called
// concurrently, when the script has several calls in flight (a JavaScript
// promise per call): at most MaxConcurrentHostCalls at once, each on a
// goroutine of its own; a call past that bound waits for a running one to
// return, and calls start in the order the script issued them.
type HostFunc func(ctx context.Context, args json.RawMessage) (any, error)

// HostFuncs maps names to host functions. A name is 1 to MaxHostNameBytes
// bytes of ASCII letters, digits and underscores, not starting with a
// digit; the function must not be nil.
type HostFuncs map[string]HostFunc

// The host-call defaults and fixed bounds.
const (
	// DefaultMaxHostCalls is the default bound on host calls per run.
	DefaultMaxHostCalls = 1000
	// defaultMaxHostArgBytes is the default bound on one host call's
	// argument, 1 MiB of JSON text.
	defaultMaxHostArgBytes int64 = 1 << 20
	// defaultMaxHostResultBytes is the default bound on one host
	// function's result, 4 MiB of JSON text (the default output ceiling).
	defaultMaxHostResultBytes = DefaultMaxOutputBytes
	// defaultMaxConcurrentHostCalls is the default bound on the host
	// functions of one run running at once.
	defaultMaxConcurrentHostCalls = 8
	// MaxHostNameBytes is the longest name a host function may have.
	MaxHostNameBytes = 64
)

// ErrInvalidHost is matched (with errors.Is) by the invalid calls of host
// functions: a malformed name or a nil function in Options.Host or
// Call.Host, a negative host bound, and host functions on a backend that
// does not declare HostCalls. It matches ErrInvalidCall.
var ErrInvalidHost error = &invalidSentinel{"effect: invalid host functions"}

var errHostUnsupported = invalid(ErrInvalidHost, "effect: the call has host functions but the backend does not declare HostCalls")

// checkHostFuncs validates a set of host functions.
func checkHostFuncs(fns HostFuncs) error {
	for name, fn := range fns {
		if !validHostName(name) {
			return invalid(ErrInvalidHost, "effect: a host function name must be 1 to "+strconv.Itoa(MaxHostNameBytes)+" ASCII letters, digits or underscores, not starting with a digit")
		}
		if fn == nil {
			return invalid(ErrInvalidHost, "effect: host function "+strconv.Quote(name)+" is nil")
		}
	}
	return nil
}

func validHostName(s string) bool {
	if s == "" || len(s) > MaxHostNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// hostFuncsFor merges the effect's host functions with a call's, and
// refuses host functions on a backend that cannot relay them. It returns
// nil when the call has none.
func (e *Effect) hostFuncsFor(call HostFuncs) (HostFuncs, error) {
	if len(call) == 0 {
		if len(e.host) == 0 {
			return nil, nil
		}
		return e.host, nil // validated in New; never written afterwards
	}
	if err := checkHostFuncs(call); err != nil {
		return nil, err
	}
	if !e.caps.HostCalls {
		return nil, errHostUnsupported
	}
	if len(e.host) == 0 {
		return call, nil
	}
	merged := make(HostFuncs, len(e.host)+len(call))
	for k, v := range e.host {
		merged[k] = v
	}
	for k, v := range call {
		merged[k] = v
	}
	return merged, nil
}

// broker is one run's spi.Host. It is made per run when the run has host
// functions, armed when the backend is called and ended when the backend
// returns or the effect stops waiting for it.
//
// Calls run concurrently, each host function on a goroutine of its own, at
// most maxConc at once; a call issued past that waits in queue, in the
// order issued, for a running one to return.
type broker struct {
	funcs     HostFuncs
	maxCalls  int
	maxArg    int64
	maxResult int64
	maxConc   int
	accepted  int // calls accepted so far (guarded by mu)
	e         *Effect
	st        *runState // the run's record (hostcall_record.go); may be nil
	job       *job      // the backend call; a running host function holds it
	dur       *Durable  // the durable run's log and bounds (durable.go); nil: not durable

	mu        sync.Mutex
	runCtx    context.Context // the backend's context
	ctx       context.Context // the host functions' context
	cancel    context.CancelFunc
	cancelRun context.CancelFunc // cancels the backend's context
	ended     bool
	calls     int
	running   int         // host functions running, at most maxConc
	queue     []*hostCall // issued calls waiting for a slot, in order
	waiting   int64       // the bytes of their arguments
	verdict   error       // what ends the run, when the broker decided it
	logBytes  int64       // a durable run's log bytes so far (durable.go)
}

var _ spi.HostStarter = (*broker)(nil)

func (e *Effect) newBroker(funcs HostFuncs, st *runState, dur *Durable) *broker {
	return &broker{funcs: funcs, maxCalls: e.maxHostCalls, maxArg: e.maxHostArg, maxResult: e.maxHostResult,
		maxConc: e.maxHostConc, e: e, st: st, dur: dur}
}

// maxWaiting bounds the argument bytes the calls waiting for a slot hold:
// as many as the calls running may hold, so that a script issuing calls
// faster than its host answers cannot make the host hold more.
func (b *broker) maxWaiting() int64 {
	if b.maxArg > math.MaxInt64/int64(b.maxConc) {
		return math.MaxInt64
	}
	return b.maxArg * int64(b.maxConc)
}

// arm starts the run: host functions get a context derived from the
// backend's, done at the wall clock counted from now, and hold j while
// they run.
func (b *broker) arm(bctx context.Context, cancelRun context.CancelFunc, wall time.Duration, j *job) {
	ctx, cancel := context.WithTimeout(bctx, wall)
	b.mu.Lock()
	b.runCtx, b.ctx, b.cancel, b.cancelRun, b.job = bctx, ctx, cancel, cancelRun, j
	b.mu.Unlock()
}

// end marks the run over: no call is delivered afterwards, the context of
// every host function still running is done, and every call still waiting
// for a slot is answered with errHostRunEnded without running. It is
// idempotent.
func (b *broker) end() {
	b.mu.Lock()
	b.ended = true
	cancel := b.cancel
	queued := b.queue
	b.queue, b.waiting = nil, 0
	b.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	for _, c := range queued {
		c.ended(0, errHostRunEnded, HostCallCanceled)
		c.done(nil, errHostRunEnded)
	}
}

// decide records what ends the run (the first decision wins) and cancels
// the backend's context, so that the backend stops. It reports whether
// err is the verdict.
func (b *broker) decide(err error) bool {
	won, stop := b.settle(err)
	stop()
	return won
}

// settle is decide without the cancellation: it records err as the
// verdict when there is none yet, reports whether it did, and returns the
// function that cancels the backend's context (what the record must show
// before the backend stops, a caller completes first).
func (b *broker) settle(err error) (won bool, stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	won = b.verdict == nil
	if won {
		b.verdict = err
	}
	if cancelRun := b.cancelRun; cancelRun != nil {
		return won, cancelRun
	}
	return won, func() {}
}

// decided returns the broker's verdict on the run, or nil.
func (b *broker) decided() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.verdict
}

// hostError is an error the broker returns to the backend, to be thrown
// into the script. Its text is fixed or bounded.
type hostError struct{ msg string }

func (e *hostError) Error() string { return e.msg }

// The fixed texts a script may see.
var (
	errHostRunEnded   = &hostError{"effect: host call after the run ended"}
	errHostTooMany    = &hostError{"effect: too many host calls"}
	errHostArgsJSON   = &hostError{"effect: host call argument is not valid JSON"}
	errHostWallClock  = &hostError{"effect: the wall clock ran out during a host call"}
	errHostStopped    = &hostError{"effect: the run was stopped during a host call"}
	errHostPanicked   = &hostError{"effect: the host function failed"}
	errHostNoJSONText = &hostError{"effect: the host function's result is not JSON"}
)

// hostResult is what the goroutine running a host function hands back.
type hostResult struct {
	text     []byte
	err      error
	panicked bool
	badValue bool
}

// hostCall is one issued call, from its issue to its answer.
type hostCall struct {
	name  string
	fn    HostFunc
	arg   json.RawMessage
	hctx  context.Context
	rec   *hostCallEntry // its line in the run record
	seq   int            // its place among the run's accepted calls (HostCallSeq)
	done  func(json.RawMessage, error)
	began func() // marks the start of the host function in the record
}

// ended completes the call's line in the run record.
func (c *hostCall) ended(bytesOut int64, err error, o HostCallOutcome) {
	c.rec.end(bytesOut, err, o)
}

// Call implements spi.Host: it issues the call and waits for its answer,
// or for the run to stop. The host function runs on a goroutine of its
// own, never the caller's: when the run stops (the wall clock, the
// caller's cancellation) Call returns at once, even when the host
// function ignores its own context, so a backend blocked in Call returns
// from Evaluate in time (the function is counted in Abandoned until it
// returns). If it outlives the wall clock, the watch (see exec) decides
// the run's outcome and cancels the backend's context.
func (b *broker) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	type answer struct {
		text json.RawMessage
		err  error
	}
	ch := make(chan answer, 1)
	b.issue(ctx, name, args, func(text json.RawMessage, err error) { ch <- answer{text, err} })
	b.mu.Lock()
	hctx := b.ctx
	b.mu.Unlock()
	if hctx == nil {
		a := <-ch // not armed: Start answered at once
		return a.text, a.err
	}
	var stop <-chan struct{}
	if ctx != nil {
		stop = ctx.Done()
	}
	select {
	case a := <-ch:
		return a.text, a.err
	case <-hctx.Done():
		if err := b.stopped(hctx); err != nil {
			return nil, err
		}
		return nil, errHostStopped
	case <-stop:
		return nil, errHostStopped
	}
}

// Start implements spi.HostStarter: it checks the call against the run's
// rules at once, in the order the backend issues calls, then runs the
// host function under the run's context on a goroutine of its own (or
// queues it while MaxConcurrentHostCalls run) and bounds its result.
func (b *broker) Start(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) {
	b.issue(ctx, name, args, done)
}

// issue is Start: it runs the host function on a goroutine of its own.
func (b *broker) issue(ctx context.Context, name string, args json.RawMessage, done func(json.RawMessage, error)) {
	b.mu.Lock()
	if b.ended || b.ctx == nil || b.verdict != nil {
		b.mu.Unlock()
		done(nil, errHostRunEnded)
		return
	}
	b.calls++
	n, hctx := b.calls, b.ctx
	b.mu.Unlock()
	if ctx != nil && ctx.Err() != nil {
		done(nil, errHostStopped)
		return
	}
	if n > b.maxCalls {
		b.decide(&Failure{Code: CodeLimitExceeded, Kind: LimitHostCalls, Limit: int64(b.maxCalls)})
		done(nil, errHostTooMany)
		return
	}
	fn, ok := b.funcs[name]
	if !ok && (b.dur == nil || !b.replaying()) {
		// (A call a durable run's log answers needs no host function.)
		done(nil, &hostError{"effect: unknown host function " + quoteName(name)})
		return
	}
	if len(args) == 0 {
		args = json.RawMessage("null")
	}
	if int64(len(args)) > b.maxArg {
		done(nil, &hostError{"effect: host call argument is " + strconv.Itoa(len(args)) + " bytes, over the limit of " + strconv.FormatInt(b.maxArg, 10) + " (MaxHostArgBytes)"})
		return
	}
	if !json.Valid(args) {
		done(nil, errHostArgsJSON)
		return
	}
	if err := b.stopped(hctx); err != nil {
		done(nil, err)
		return
	}
	c := &hostCall{name: name, fn: fn, arg: append(json.RawMessage(nil), args...), hctx: hctx, done: done}
	c.rec = b.st.hostCallIssued(name, int64(len(c.arg)))
	b.mu.Lock()
	b.accepted++
	c.seq = b.accepted
	b.mu.Unlock()
	idx := c.seq
	if c.rec != nil {
		c.seq = c.rec.i + 1 // the record's own order, when it keeps one
	}
	if b.dur != nil {
		// A durable run keeps each call's argument, bounded by its log.
		c.rec.keep(c.arg, nil)
		if !b.logged(len(c.arg)) {
			c.ended(0, errHostRunEnded, HostCallCanceled)
			done(nil, errHostRunEnded)
			return
		}
		if idx <= len(b.dur.Replay) && b.replay(c, idx) {
			return
		}
		if c.fn == nil {
			// The log holds the call but no answer, and no host function
			// answers it now: a divergence, never an error the script
			// could catch.
			b.decide(&Failure{Code: CodeReplayDiverged, Reason: "host call " + strconv.Itoa(idx) + " to " + quoteName(name) + " has no host function to answer it"})
			c.ended(0, errHostDiverged, HostCallCanceled)
			done(nil, errHostDiverged)
			return
		}
	}

	// A running host function holds the backend call, so that it counts
	// in Abandoned until it returns even when the backend returned
	// without it. The hold is taken with the run still on: end comes
	// after it, and the backend's own release after end.
	b.mu.Lock()
	switch {
	case b.ended:
		b.mu.Unlock()
		c.ended(0, errHostRunEnded, HostCallCanceled)
		done(nil, errHostRunEnded)
		return
	case b.running >= b.maxConc && b.waiting+int64(len(c.arg)) > b.maxWaiting():
		b.mu.Unlock()
		err := &hostError{"effect: too many host call argument bytes waiting for a slot (over MaxHostArgBytes × MaxConcurrentHostCalls, " + strconv.FormatInt(b.maxWaiting(), 10) + ")"}
		c.ended(0, err, HostCallError)
		done(nil, err)
		return
	case b.running >= b.maxConc:
		b.queue = append(b.queue, c)
		b.waiting += int64(len(c.arg))
		b.mu.Unlock()
		return
	}
	b.running++
	b.job.hold()
	b.mu.Unlock()
	go b.serve(c)
}

// serve runs c's host function, then each call that waited for the slot
// it frees, in the order they were issued. The slot passes from call to
// call without being released, so a call issued meanwhile cannot overtake
// one that waited.
func (b *broker) serve(c *hostCall) {
	for c != nil {
		text, err := b.exec(c)
		b.mu.Lock()
		var next *hostCall
		if len(b.queue) > 0 && !b.ended {
			next = b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			b.waiting -= int64(len(next.arg))
			b.job.hold() // the slot passes on: running is unchanged
		} else {
			b.running--
		}
		b.mu.Unlock()
		b.job.finish()
		c.done(text, err)
		c = next
	}
}

// exec runs one call's host function and decides what the script gets.
// If the function outlives the wall clock, the watch decides the run's
// outcome and cancels the backend's context, so the effect stops waiting
// for the backend at once, even when the host function ignores its own
// context (it is then counted in Abandoned until it returns).
func (b *broker) exec(c *hostCall) (json.RawMessage, error) {
	hctx := c.hctx
	if err := b.stopped(hctx); err != nil {
		// The run stopped while the call waited for its slot: it never
		// runs.
		c.ended(0, err, HostCallCanceled)
		return nil, err
	}
	c.rec.begin()
	watch := context.AfterFunc(hctx, func() { _ = b.stopped(hctx) })
	r := runHostFunc(context.WithValue(hctx, hostCallSeqKey{}, c.seq), c.fn, c.arg)
	watch()
	if err := b.stopped(hctx); err != nil {
		c.ended(int64(len(r.text)), err, HostCallCanceled)
		return nil, err // the answer came too late to be delivered
	}
	var err error
	switch {
	case asSuspension(r.err) != nil:
		return nil, b.suspend(c, asSuspension(r.err))
	case r.panicked:
		b.decide(&untypedError{msg: "effect: host function " + quoteName(c.name) + " panicked"})
		err = errHostPanicked
	case r.badValue:
		b.decide(&untypedError{msg: "effect: host function " + quoteName(c.name) + " returned a value that is not JSON"})
		err = errHostNoJSONText
	case r.err != nil:
		err = &hostError{boundText(errorText(r.err))}
	case int64(len(r.text)) > b.maxResult:
		err = &hostError{"effect: host function result is " + strconv.Itoa(len(r.text)) + " bytes, over the limit of " + strconv.FormatInt(b.maxResult, 10) + " (MaxHostResultBytes)"}
	}
	if err != nil {
		c.ended(int64(len(r.text)), err, HostCallError)
		return nil, err
	}
	b.mu.Lock()
	ended := b.ended
	b.mu.Unlock()
	if ended {
		c.ended(int64(len(r.text)), errHostRunEnded, HostCallCanceled)
		return nil, errHostRunEnded
	}
	if !b.logged(len(r.text)) {
		c.ended(int64(len(r.text)), errHostRunEnded, HostCallCanceled)
		return nil, errHostRunEnded
	}
	if b.dur != nil {
		c.rec.keep(nil, r.text)
	}
	c.ended(int64(len(r.text)), nil, HostCallOK)
	return r.text, nil
}

// stopped reports why hctx is done, deciding the run's outcome when the
// wall clock ran out, or nil when it is not done.
func (b *broker) stopped(hctx context.Context) error {
	if hctx.Err() == nil {
		return nil
	}
	b.mu.Lock()
	ended := b.ended
	b.mu.Unlock()
	// hctx is done but not the backend's context, and the run has not
	// ended: the broker's own deadline passed, the wall clock ran out
	// inside a host call.
	if !ended && b.runCtx.Err() == nil {
		b.decide(&Failure{Code: CodeLimitExceeded, Kind: LimitWallClock})
		return errHostWallClock
	}
	if ended {
		return errHostRunEnded
	}
	return errHostStopped
}

// runHostFunc calls fn, recovering a panic, and marshals its result.
func runHostFunc(ctx context.Context, fn HostFunc, args json.RawMessage) (r hostResult) {
	defer func() {
		if p := recover(); p != nil {
			r = hostResult{panicked: true}
		}
	}()
	v, err := fn(ctx, args)
	if err != nil {
		return hostResult{err: err}
	}
	if raw, ok := v.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return hostResult{badValue: true}
		}
		return hostResult{text: append([]byte(nil), raw...)}
	}
	text, err := json.Marshal(v)
	if err != nil {
		return hostResult{badValue: true}
	}
	return hostResult{text: text}
}

// quoteName quotes a name a script asked for, cut to MaxHostNameBytes and
// scrubbed: the script chose it, so it is bounded like all its text.
func quoteName(name string) string {
	if len(name) > MaxHostNameBytes {
		return strconv.Quote(boundText(name[:MaxHostNameBytes])) + "…"
	}
	return strconv.Quote(boundText(name))
}

// hostBroker returns the broker of req, or nil.
func hostBroker(req spi.Request) *broker {
	b, _ := req.Host.(*broker)
	return b
}

// setHost validates the host options and fills in their defaults.
func (e *Effect) setHost(o *Options) error {
	switch {
	case o.MaxHostCalls < 0:
		return invalid(ErrInvalidLimits, "effect: options: negative MaxHostCalls")
	case o.MaxHostArgBytes < 0:
		return invalid(ErrInvalidLimits, "effect: options: negative MaxHostArgBytes")
	case o.MaxHostResultBytes < 0:
		return invalid(ErrInvalidLimits, "effect: options: negative MaxHostResultBytes")
	case o.MaxConcurrentHostCalls < 0:
		return invalid(ErrInvalidLimits, "effect: options: negative MaxConcurrentHostCalls")
	}
	e.maxHostCalls = cmp.Or(o.MaxHostCalls, DefaultMaxHostCalls)
	e.maxHostArg = cmp.Or(o.MaxHostArgBytes, defaultMaxHostArgBytes)
	e.maxHostResult = cmp.Or(o.MaxHostResultBytes, defaultMaxHostResultBytes)
	e.maxHostConc = cmp.Or(o.MaxConcurrentHostCalls, defaultMaxConcurrentHostCalls)
	if len(o.Host) == 0 {
		return nil
	}
	if err := checkHostFuncs(o.Host); err != nil {
		return err
	}
	if !e.caps.HostCalls {
		return invalid(ErrInvalidHost, "effect: Options.Host is set but the backend does not declare HostCalls")
	}
	e.host = make(HostFuncs, len(o.Host))
	for k, v := range o.Host {
		e.host[k] = v
	}
	return nil
}

// hostCallSeqKey is the context key of a host call's place in its run's
// record.
type hostCallSeqKey struct{}

// HostCallSeq returns, inside a host function, its call's place in the
// run's record (Record.HostCalls, from 1, in the order the script issued
// the calls; the Seq of its events): calls run concurrently, so the order
// in which host functions begin is not the script's order, and a host
// function that keeps its own log of calls sorts it by this. False
// outside a host function.
func HostCallSeq(ctx context.Context) (int, bool) {
	seq, ok := ctx.Value(hostCallSeqKey{}).(int)
	return seq, ok
}
