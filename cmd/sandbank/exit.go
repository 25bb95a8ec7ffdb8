package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/sandbank/sandbank/effect"
)

// Exit codes. They are part of the command line's contract (see doc.go),
// and every one of them comes from classify, so that the code and the
// "retryable" of --json never disagree.
const (
	exitOK      = 0   // a value, or a command that succeeded
	exitUntyped = 1   // infrastructure: retryable; or a failing matrix
	exitFailure = 2   // a typed failure: the script's own doing
	exitSuspend = 3   // run --suspend, resume: the run suspended, its continuation written
	exitUsage   = 64  // the caller's invalid request (EX_USAGE)
	exitSIGINT  = 130 // cancelled by SIGINT (128 + 2)
	exitSIGTERM = 143 // cancelled by SIGTERM (128 + 15)
)

// exitCodes is the command line's table from the effect's kind of an
// error to its exit code (a test proves it covers effect.Kinds()).
var exitCodes = map[effect.Kind]int{
	effect.KindFailure:          exitFailure, // the script's own doing
	effect.KindInvalidCall:      exitUsage,   // the caller's invalid request
	effect.KindClosed:           exitUsage,   // a call after Close: the caller's mistake
	effect.KindCanceled:         exitUntyped, // cancelled, but by no signal of ours
	effect.KindDeadlineExceeded: exitUntyped,
	effect.KindOverloaded:       exitUntyped,
	effect.KindInfrastructure:   exitUntyped,
	effect.KindQuota:            exitUntyped, // no tenant runs here; a caller's quota is retryable later
}

// classify is the one classification of an error: its exit code, and
// whether retrying the same command may help.
//
//   - an exitError carries its code (usage errors found by the command
//     line itself, and the untyped errors it wraps), retryable exactly
//     for exitUntyped;
//   - a signal that cancelled the run: 130 or 143, not retryable (the
//     person or supervisor who sent it wanted the run to stop);
//   - a durable run's suspension (effect.ErrSuspended): 3, not retryable
//     (resume it instead);
//   - anything else is looked up by effect.KindOf in exitCodes, and is
//     retryable as effect.Retryable says: the script's typed failure is
//     2, the caller's invalid request (effect.ErrInvalidCall: limits
//     above the ceiling, an invalid shape, …) 64, infrastructure 1 and
//     retryable; a cancellation that no signal caused is 1, not
//     retryable.
func classify(err error) (code int, retryable bool) {
	var (
		ee  *exitError
		sig *signalError
	)
	switch {
	case err == nil:
		return exitOK, false
	case errors.As(err, &sig):
		return sig.exitCode(), false
	case errors.As(err, &ee):
		return ee.code, ee.code == exitUntyped
	case errors.Is(err, effect.ErrSuspended):
		return exitSuspend, false // a typed failure the host decided: its own code
	}
	kind := effect.KindOf(err)
	code, ok := exitCodes[kind]
	if !ok {
		code = exitUntyped
	}
	return code, code == exitUntyped && kind.Retryable()
}

// signalError is the cause of a run cancelled by a signal.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string {
	return fmt.Sprintf("cancelled by %s", signalName(e.sig))
}

func (e *signalError) exitCode() int {
	if e.sig == syscall.SIGTERM {
		return exitSIGTERM
	}
	return exitSIGINT
}

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case os.Interrupt:
		return "SIGINT"
	default:
		return sig.String()
	}
}

// cancelOnSignal returns a context cancelled, with a *signalError as its
// cause, when the process receives SIGINT or SIGTERM, and a stop function
// that restores the default handling. It is signal.NotifyContext that
// also remembers which signal it was (NotifyContext records it only from
// Go 1.26 on).
func cancelOnSignal(parent context.Context) (context.Context, func()) {
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(&signalError{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// signalled returns err, or the signal that cancelled ctx when one did:
// a run stopped by a signal reports the signal, whatever error the
// cancellation caused below.
func signalled(ctx context.Context, err error) error {
	var sig *signalError
	if err != nil && errors.As(context.Cause(ctx), &sig) {
		return fmt.Errorf("%w (%v)", sig, err)
	}
	return err
}
