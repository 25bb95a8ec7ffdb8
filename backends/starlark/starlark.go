package starlark

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	sl "go.starlark.net/starlark"
	slsyntax "go.starlark.net/syntax"

	"github.com/sandbank/sandbank/internal/jsdepth"
	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/spi"
)

// Language is the language name this backend declares.
const Language = "starlark"

// DefaultMaxSteps is the default step budget of one run: one million
// steps, enough for the shared reshape benchmark (10,000 rows, about
// 650,000 steps), and below the nesting depth at which go.starlark.net's
// recursive value printing overflows the goroutine stack (see the package
// documentation, # Security considerations).
const DefaultMaxSteps int64 = 1_000_000

// DefaultMaxResultBytes is the default ceiling on the result as JSON text
// while the backend encodes it: 64 MiB, well above the effect's default
// output bound (4 MiB), which is the bound that applies to callers.
const DefaultMaxResultBytes int64 = 64 << 20

// scriptName is the file name that positions in error messages carry.
const scriptName = "script.star"

// Options configure the backend. The zero value (or a nil *Options) means
// defaults.
type Options struct {
	// MaxSteps is the step budget of one run (Starlark's
	// Thread.SetMaxExecutionSteps); a run that exhausts it is reported as
	// the CPU limit. A built-in function call counts as one step however
	// long it runs. Zero means DefaultMaxSteps; negative is refused.
	//
	// Raising it above about 1,000,000 is unsafe for untrusted scripts: a
	// script can nest a value about one level per step, and printing a
	// value nested more than about 1.1 million levels deep (str, repr, %,
	// format) overflows the goroutine stack, a fatal error that ends the
	// whole process.
	MaxSteps int64
	// MaxResultBytes bounds the result as JSON text while it is encoded, so
	// that a value sharing sub-values (a list holding itself twice, nested
	// a hundred times) cannot make the backend build an unbounded text. A
	// larger result is reported as a thrown error. Zero means
	// DefaultMaxResultBytes; negative is refused. The effect's
	// MaxOutputBytes is the bound callers rely on; keep this one above it.
	MaxResultBytes int64
	// OnStart, when set, is called on the run's goroutine once the script
	// is compiled and its input converted, just before the script starts
	// (where the wall clock is armed). Nil means nothing is called. The
	// starlark-wasm guest (backends/starlarkwasm) uses it to tell its host
	// that the script's hard wall clock starts now.
	OnStart func()
	// Files, when set, is the store of every run's files module instead
	// of the run's own (Request.Files and the request's bounds): the
	// starlark-wasm guest sets it to a relay to its host, which holds the
	// run's files and bounds and decides the outcome of a write past
	// them. Nil means each run's own.
	Files FileStore
}

// Backend is a Starlark interpreter per run. It holds no mutable state:
// build one with [New] and use it from any number of goroutines.
type Backend struct {
	maxSteps    uint64
	maxResult   int
	predeclared sl.StringDict
	onStart     func()
	files       FileStore // Options.Files
	// timer arms the wall clock (time.NewTimer; tests replace it).
	timer func(time.Duration) (<-chan time.Time, func() bool)
	// afterRun, when set (tests only), is called when a run has ended and
	// before Evaluate learns it.
	afterRun func()
}

// newTimer is the backend's wall-clock timer.
func newTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// New returns a Starlark backend. A nil opts means defaults; a negative
// option is an error.
func New(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case o.MaxSteps < 0:
		return nil, fmt.Errorf("starlark: MaxSteps is %d, want > 0 (or 0 for the default)", o.MaxSteps)
	case o.MaxResultBytes < 0:
		return nil, fmt.Errorf("starlark: MaxResultBytes is %d, want > 0 (or 0 for the default)", o.MaxResultBytes)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = DefaultMaxSteps
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	maxResult := o.MaxResultBytes
	if maxResult > int64(^uint(0)>>2) {
		maxResult = int64(^uint(0) >> 2)
	}
	return &Backend{
		maxSteps:    uint64(o.MaxSteps),
		maxResult:   int(maxResult),
		predeclared: newPredeclared(),
		onStart:     o.OnStart,
		files:       o.Files,
		timer:       newTimer,
	}, nil
}

// Warm implements spi.Warmer. There is nothing to prepare (the
// interpreter compiles each script as it runs), so it only reports ctx's
// error, if any.
func (b *Backend) Warm(ctx context.Context) error { return ctx.Err() }

// Close releases nothing (the backend holds no resources) and is
// idempotent; Evaluate still works after it.
func (b *Backend) Close() error { return nil }

// Who ended a run first; the first to set run.cause wins.
const (
	causeNone  int32 = iota
	causeDone        // the script finished (value or error) on its own
	causeSteps       // the step budget ran out
	causeWall        // the request's wall clock expired
	causeCtx         // the context was cancelled
	causeFiles       // a write went past the output files' bounds (files.go)
)

// The file options of every script: Starlark's defaults (no while loops,
// no recursion, no top-level control flow, no global reassignment, no set).
var fileOptions = &slsyntax.FileOptions{}

// maxSteps bounds the brackets and operators of a script
// (jsdepth.Steps), each of which can nest the syntax tree one level
// deeper. Starlark's parser refuses deep nesting of its own ("excessive
// nesting"), but not suffix chains (a.a.a…, a()()…), on which its resolver
// recurses on the Go stack: a 16 MiB chain of 8,000,000 calls overflowed
// it (a fatal error that ends the process), 1,000,000 passed. 262,144 is
// about 2 MiB of ordinary code.
const maxSteps = 1 << 18

// errLoadRefused is what a load would report; compile refuses loads first.
var errLoadRefused = errors.New("load is not available: scripts may use only json and math")

// Evaluate compiles the script, converts the input, calls main(input) on a
// new thread with fresh globals, and encodes the result.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	begun := time.Now()
	r := &run{b: b, logs: req.Logs, files: runfiles.New(req)}
	r.predeclared = make(sl.StringDict, len(b.predeclared)+3)
	for k, v := range b.predeclared {
		r.predeclared[k] = v
	}
	if b.files != nil {
		r.files = nil // the store's holder decides the outcome
		r.predeclared["files"] = r.filesModule(b.files)
	} else {
		r.predeclared["files"] = r.filesModule(r.files) // files.go
	}
	if req.Host != nil {
		r.withHost(ctx, req.Host, r.predeclared) // host.go
	}
	if jsdepth.Steps(req.Script, maxSteps) > maxSteps {
		return spi.Threw("SyntaxError", fmt.Sprintf("starlark: the script has more than %d brackets and operators", maxSteps)), nil
	}
	_, prog, err := sl.SourceProgramOptions(fileOptions, scriptName, req.Script, r.predeclared.Has)
	if err != nil {
		return spi.Threw("SyntaxError", err.Error()), nil
	}
	if prog.NumLoads() > 0 {
		return spi.Threw("Error", errLoadRefused.Error()), nil
	}
	input, err := decodeInput(req.Input)
	if err != nil {
		return spi.Outcome{}, err
	}

	r.prog, r.input = prog, input
	r.thread = newThread(r)

	// The wall clock is armed as the script starts: compiling and
	// converting the input are not charged to it.
	if b.onStart != nil {
		b.onStart()
	}
	var expired <-chan time.Time
	start := time.Now()
	if req.Limits.WallClock > 0 {
		c, stop := b.timer(req.Limits.WallClock)
		defer stop()
		expired = c
	}
	type ended struct {
		out     spi.Outcome
		elapsed time.Duration // from the start to the end of the run
	}
	done := make(chan ended, 1)
	go func() {
		out := r.exec()
		e := ended{out, time.Since(start)}
		if b.afterRun != nil {
			b.afterRun()
		}
		done <- e
	}()

	// Every value goes through late: whichever branch sees the run end, a
	// value the script produced after its wall clock is never delivered.
	late := func(e ended) spi.Outcome {
		if req.Limits.WallClock > 0 && e.elapsed > req.Limits.WallClock && e.out.Kind != spi.KindLimit {
			return spi.Limited(spi.LimitWallClock)
		}
		return e.out
	}
	select {
	case e := <-done:
		// A run that outlived its wall clock (one long built-in call, and
		// the timer lost the race on a busy machine) never delivers its
		// value: the clock is a limit, whoever noticed first.
		out := r.files.Conclude(late(e))
		if req.Logs != nil {
			// The run is over: its thread's step count is final.
			out.Stats = spi.Stats{Startup: start.Sub(begun), ScriptTime: e.elapsed,
				CPUUnit: "steps", CPUUnits: int64(r.thread.ExecutionSteps())}
		}
		return out, nil
	case <-expired:
		if r.cause.CompareAndSwap(causeNone, causeWall) {
			// The interpreter stops at its next step; a long built-in
			// call finishes first, in the background (WallClock soft).
			r.thread.Cancel("wall clock expired")
			return spi.Limited(spi.LimitWallClock), nil
		}
		// The run ended first and is delivering; the timer fired, so the
		// value is late unless it settled within the clock.
		return late(<-done), nil
	case <-ctx.Done():
		if r.cause.CompareAndSwap(causeNone, causeCtx) {
			r.thread.Cancel("cancelled")
			return spi.Outcome{}, ctx.Err()
		}
		return late(<-done), nil
	}
}

// newThread returns the thread of one run: print writes a line to the
// request's log sink (info, stdout), load is refused, and the step budget
// ends the run as the CPU limit.
func newThread(r *run) *sl.Thread {
	t := &sl.Thread{
		Name:  "sandbank",
		Print: r.print,
		Load: func(*sl.Thread, string) (sl.StringDict, error) {
			return nil, errLoadRefused
		},
		OnMaxSteps: func(t *sl.Thread) {
			r.cause.CompareAndSwap(causeNone, causeSteps)
			t.Cancel("step budget exhausted")
		},
	}
	t.SetMaxExecutionSteps(r.b.maxSteps)
	return t
}

// run is one evaluation.
type run struct {
	b           *Backend
	predeclared sl.StringDict // the backend's, files, and host and host_try for a run with host functions
	files       *runfiles.Set // the run's files (files.go)
	prog        *sl.Program
	input       sl.Value
	thread      *sl.Thread
	cause       atomic.Int32
	logs        spi.LogSink // nil: print goes nowhere
	full        bool        // the sink said it is full
}

// print is the thread's Print: one line per call, cut at
// spi.MaxLogLineBytes.
func (r *run) print(_ *sl.Thread, msg string) {
	if r.logs == nil || r.full {
		return
	}
	if len(msg) > spi.MaxLogLineBytes {
		msg = msg[:spi.MaxLogLineBytes]
	}
	if !r.logs.Log(spi.LevelInfo, spi.StreamStdout, msg) {
		r.full = true
	}
}

// msgInterpreterFailed is the message of a run whose script made the
// interpreter panic.
const msgInterpreterFailed = "starlark: the interpreter failed on this script"

// exec runs the module and main on the calling goroutine. A panic of the
// interpreter is the script's doing (the run is nothing but the script's
// evaluation, and fails the same way every time): a thrown InternalError,
// not a retryable infrastructure outcome.
func (r *run) exec() (out spi.Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = r.settle(spi.Threw("InternalError", msgInterpreterFailed))
		}
	}()
	globals, err := r.prog.Init(r.thread, r.predeclared)
	if err != nil {
		return r.failed(err)
	}
	globals.Freeze()
	main, ok := globals["main"]
	if !ok {
		return r.settle(spi.Threw("Error", "the script defines no main(input) function"))
	}
	if _, ok := main.(sl.Callable); !ok {
		return r.settle(spi.Threw("Error", fmt.Sprintf("main is a %s, not a function", main.Type())))
	}
	result, err := sl.Call(r.thread, main, sl.Tuple{r.input}, nil)
	if err != nil {
		return r.failed(err)
	}
	text, err := encodeResult(result, r.b.maxResult, &r.cause)
	if err != nil {
		var ee *encodeError
		if errors.As(err, &ee) {
			return r.settle(spi.Threw("Error", ee.msg))
		}
		return r.stopped()
	}
	return r.settle(spi.OK(text))
}

// settle reports out when the script ended on its own, or the limit that
// stopped it first.
func (r *run) settle(out spi.Outcome) spi.Outcome {
	if r.cause.CompareAndSwap(causeNone, causeDone) || r.cause.Load() == causeDone {
		return out
	}
	return r.stopped()
}

// stopped reports what stopped the run.
func (r *run) stopped() spi.Outcome {
	switch r.cause.Load() {
	case causeSteps:
		return spi.Limited(spi.LimitCPU)
	case causeWall:
		return spi.Limited(spi.LimitWallClock)
	case causeFiles:
		return spi.Limited(spi.LimitFiles)
	default: // causeCtx: Evaluate has already returned ctx.Err()
		return spi.Infrastructure("starlark: run cancelled")
	}
}

// failed maps an error from the interpreter: a limit that cancelled the
// thread, fail(...), or a runtime error.
func (r *run) failed(err error) spi.Outcome {
	if !r.cause.CompareAndSwap(causeNone, causeDone) && r.cause.Load() != causeDone {
		return r.stopped()
	}
	var ee *sl.EvalError
	if !errors.As(err, &ee) {
		return spi.Threw("Error", err.Error())
	}
	stack := ee.CallStack
	if n := len(stack); n > 0 && stack[n-1].Name == "fail" && stack[n-1].Pos.Filename() == "<builtin>" {
		return spi.Threw("fail", strings.TrimPrefix(ee.Msg, "fail: "))
	}
	// Prefix the position of the innermost frame of the script.
	for i := len(stack) - 1; i >= 0; i-- {
		if stack[i].Pos.Filename() == scriptName {
			return spi.Threw("Error", stack[i].Pos.String()+": "+ee.Msg)
		}
	}
	return spi.Threw("Error", ee.Msg)
}
