package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

// TestClassify: every error has one exit code; retryable is true only for
// exit code 1, and as effect.Retryable says, so --json cannot disagree
// with the code or with the effect.
func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code int
	}{
		{"typed failure", &effect.Failure{Code: record.CodeScriptError}, exitFailure},
		{"wrapped typed failure", fmt.Errorf("x: %w", &effect.Failure{Code: record.CodeLimitExceeded}), exitFailure},
		{"invalid call", effect.ErrInvalidCall, exitUsage},
		{"invalid limits", fmt.Errorf("x: %w", effect.ErrInvalidLimits), exitUsage},
		{"invalid shape", effect.ErrInvalidShape, exitUsage},
		{"closed", effect.ErrClosed, exitUsage},
		{"usage error", usagef("bad flag"), exitUsage},
		{"infrastructure", errors.New("engine crashed"), exitUntyped},
		{"deadline", context.DeadlineExceeded, exitUntyped},
		{"overloaded", fmt.Errorf("x: %w", effect.ErrOverloaded), exitUntyped},
		{"canceled by no signal", context.Canceled, exitUntyped},
		{"SIGINT", &signalError{syscall.SIGINT}, exitSIGINT},
		{"SIGTERM", fmt.Errorf("%w (context canceled)", &signalError{syscall.SIGTERM}), exitSIGTERM},
		{"signal wins over the failure it caused", errors.Join(&signalError{syscall.SIGTERM}, &effect.Failure{Code: record.CodeScriptError}), exitSIGTERM},
	}
	for _, tt := range tests {
		code, retryable := classify(tt.err)
		assert.Equal(t, tt.code, code, tt.name)
		var ee *exitError
		if code < exitSIGINT && !errors.As(tt.err, &ee) {
			assert.Equal(t, effect.Retryable(tt.err), retryable, "%s: the effect agrees on retryable", tt.name)
		}
		if retryable {
			assert.Equal(t, exitUntyped, code, "%s: only exit 1 is retryable", tt.name)
		}
	}
	code, retryable := classify(nil)
	assert.Equal(t, exitOK, code)
	assert.False(t, retryable)
}

// TestExitCodesCoverEveryKind: every kind of error the effect declares
// has its exit code, so a new kind cannot fall through to a default.
func TestExitCodesCoverEveryKind(t *testing.T) {
	for _, k := range effect.Kinds() {
		_, ok := exitCodes[k]
		assert.True(t, ok, "kind %s has no exit code", k)
	}
	assert.Len(t, exitCodes, len(effect.Kinds()))
}

// TestRunInvalidCall: a request the effect refuses as the caller's own
// mistake (effect.ErrInvalidCall) exits 64, like the command line's own
// usage errors, and is never reported as retryable.
func TestRunInvalidCall(t *testing.T) {
	external := script(t, "shape.json", `{"$ref":"https://example.com/schema.json"}`)
	for _, asJSON := range []bool{false, true} {
		a, _ := fakeApp(t)
		args := []string{"run", "--shape", external, script(t, "s.js", "value 1")}
		if asJSON {
			args = append([]string{"run", "--json"}, args[1:]...)
		}
		res := cli(a, "", args...)
		assert.Equal(t, exitUsage, res.code, res.stderr)
		assert.Empty(t, res.stdout)
		assertOneLine(t, res.stderr)
		assert.Contains(t, res.stderr, "shape")
	}
}
