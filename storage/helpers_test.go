package storage

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testScript is the script the tests store; the fake backend never runs
// it.
var testScript = []byte("input")

// requireUntyped asserts that err is an untyped, retryable error.
func requireUntyped(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	var f *effect.Failure
	require.False(t, errors.As(err, &f), "want an untyped error, got a typed failure: %v", err)
	require.True(t, effect.Retryable(err), "an untyped error must be retryable: %v", err)
}

// requireFailure asserts that err is a typed failure with code c and
// returns it.
func requireFailure(t *testing.T, err error, c record.Code) *effect.Failure {
	t.Helper()
	require.Error(t, err)
	var f *effect.Failure
	require.True(t, errors.As(err, &f), "want a typed failure, got %T: %v", err, err)
	require.Equal(t, c, f.Code, "failure: %v", err)
	require.False(t, effect.Retryable(err))
	return f
}

// watchdog bounds every wait in a test that would hang if a guarantee
// broke.
const watchdog = 10 * time.Second

// timeAfterWatchdog fires once the watchdog has passed.
func timeAfterWatchdog() <-chan time.Time { return time.After(watchdog) }

// requireInvalid asserts that err is an invalid call matching the case
// sentinel kind (and so effect.ErrInvalidCall), not retryable.
func requireInvalid(t *testing.T, err error, kind error) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, effect.ErrInvalidCall)
	require.ErrorIs(t, err, kind)
	require.False(t, effect.Retryable(err), "an invalid call must not be retryable: %v", err)
}

// mustMemoryStore returns NewMemoryStore(opts).
func mustMemoryStore(t *testing.T, opts *MemoryStoreOptions) *MemoryStore {
	t.Helper()
	s, err := NewMemoryStore(opts)
	require.NoError(t, err)
	return s
}
