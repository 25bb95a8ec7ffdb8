package effect

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
)

func TestKindOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, 0},
		{"failure", &Failure{Code: record.CodeScriptError}, KindFailure},
		{"wrapped failure", fmt.Errorf("x: %w", &Failure{Code: record.CodeLimitExceeded}), KindFailure},
		{"invalid call", ErrInvalidCall, KindInvalidCall},
		{"invalid limits", fmt.Errorf("x: %w", ErrInvalidLimits), KindInvalidCall},
		{"invalid shape", ErrInvalidShape, KindInvalidCall},
		{"closed", ErrClosed, KindClosed},
		{"wrapped closed", fmt.Errorf("x: %w", ErrClosed), KindClosed},
		{"canceled", context.Canceled, KindCanceled},
		{"wrapped canceled", fmt.Errorf("x: %w", context.Canceled), KindCanceled},
		{"deadline", context.DeadlineExceeded, KindDeadlineExceeded},
		{"overloaded", fmt.Errorf("x: %w", ErrOverloaded), KindOverloaded},
		{"quota", fmt.Errorf("x: %w", ErrQuota), KindQuota},
		{"untyped", errors.New("effect: backend failed"), KindInfrastructure},
		{"sentinel alone", ErrScriptError, KindInfrastructure},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, KindOf(tc.err))
			assert.Equal(t, tc.want.Retryable(), Retryable(tc.err))
		})
	}
}

// TestKindOfKeepsContextErrors: classifying a context error does not
// change it.
func TestKindOfKeepsContextErrors(t *testing.T) {
	err := fmt.Errorf("x: %w", context.Canceled)
	assert.Equal(t, KindCanceled, KindOf(err))
	assert.ErrorIs(t, err, context.Canceled)
}

// TestKinds: the set is closed, named, and the zero value is no kind.
func TestKinds(t *testing.T) {
	kinds := Kinds()
	assert.Len(t, kinds, len(kindNames)-1)
	seen := map[string]bool{}
	for i, k := range kinds {
		assert.Equal(t, Kind(i+1), k, "kinds are numbered from 1 without gaps")
		assert.True(t, k.Valid())
		assert.NotContains(t, k.String(), "Kind(")
		assert.False(t, seen[k.String()], "duplicate name %s", k)
		seen[k.String()] = true
	}
	assert.False(t, Kind(0).Valid())
	assert.Equal(t, "Kind(0)", Kind(0).String())
	assert.False(t, Kind(0).Retryable())
	assert.Equal(t, "Kind(99)", Kind(99).String())
	// The three kinds of error: only infrastructure is retryable.
	for _, k := range kinds {
		want := k == KindDeadlineExceeded || k == KindOverloaded || k == KindInfrastructure || k == KindQuota
		assert.Equal(t, want, k.Retryable(), "%s", k)
	}
}

// TestNewRefusalsAreInvalidCalls: every option New refuses is the
// caller's invalid call, never retryable.
func TestNewRefusalsAreInvalidCalls(t *testing.T) {
	fb := fakebackend.New(fakebackend.Capabilities(), nil)
	for name, tc := range map[string]struct {
		scripts ScriptReader
		backend *fakebackend.Backend
		opts    *Options
	}{
		"nil script reader": {nil, fb, nil},
		"nil backend":       {newMemoryStore(), nil, nil},
		"negative limit":    {newMemoryStore(), fb, &Options{MaxAbandoned: -1}},
	} {
		var err error
		if tc.backend == nil {
			_, err = New(tc.scripts, nil, tc.opts)
		} else {
			_, err = New(tc.scripts, tc.backend, tc.opts)
		}
		assert.Equal(t, KindInvalidCall, KindOf(err), name)
		assert.False(t, Retryable(err), name)
	}
}
