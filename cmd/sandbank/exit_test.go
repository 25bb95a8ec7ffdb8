package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/effect"
)

// TestClassify: every error has one exit code, and retryable is true
// exactly for exit code 1, so --json cannot disagree with the code.
func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code int
	}{
		{"typed failure", &effect.Failure{Code: effect.CodeScriptError}, exitFailure},
		{"wrapped typed failure", fmt.Errorf("x: %w", &effect.Failure{Code: effect.CodeLimitExceeded}), exitFailure},
		{"invalid call", effect.ErrInvalidCall, exitUsage},
		{"invalid limits", fmt.Errorf("x: %w", effect.ErrInvalidLimits), exitUsage},
		{"invalid shape", effect.ErrInvalidShape, exitUsage},
		{"closed", effect.ErrClosed, exitUsage},
		{"usage error", usagef("bad flag"), exitUsage},
		{"infrastructure", errors.New("engine crashed"), exitUntyped},
		{"deadline", context.DeadlineExceeded, exitUntyped},
		{"SIGINT", &signalError{syscall.SIGINT}, exitSIGINT},
		{"SIGTERM", fmt.Errorf("%w (context canceled)", &signalError{syscall.SIGTERM}), exitSIGTERM},
		{"signal wins over the failure it caused", errors.Join(&signalError{syscall.SIGTERM}, &effect.Failure{Code: effect.CodeScriptError}), exitSIGTERM},
	}
	for _, tt := range tests {
		code, retryable := classify(tt.err)
		assert.Equal(t, tt.code, code, tt.name)
		assert.Equal(t, code == exitUntyped, retryable, "%s: retryable exactly for exit 1", tt.name)
		var ee *exitError
		if code != exitUntyped && code < exitSIGINT && !errors.As(tt.err, &ee) {
			assert.False(t, effect.Retryable(tt.err), "%s: the effect agrees it is not retryable", tt.name)
		}
	}
	code, retryable := classify(nil)
	assert.Equal(t, exitOK, code)
	assert.False(t, retryable)
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
