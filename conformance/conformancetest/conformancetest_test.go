package conformancetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/conformance/conformancetest"
	"github.com/sandbank/sandbank/spi"
)

// echoBackend answers every script with its input: it passes echo, fails
// throw, and its declaration gates out the cases that need a memory limit.
// Its Close waits for release when release is not nil.
type echoBackend struct{ release chan struct{} }

func (echoBackend) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockSoft, FreshPerRun: true}
}

func (echoBackend) Evaluate(_ context.Context, req spi.Request) (spi.Outcome, error) {
	return spi.OK(json.RawMessage(req.Input)), nil
}

func (b echoBackend) Close() error {
	if b.release != nil {
		<-b.release
	}
	return nil
}

func echoFactory() (spi.Backend, error) { return echoBackend{}, nil }

// recorder is a testing.TB that is not a *testing.T and keeps the failures
// Run reports instead of failing the test.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatal(args ...any) { r.fatals = append(r.fatals, fmt.Sprint(args...)) }

// TestRunInSubtests: on a *testing.T every case runs (a passing case
// passes, a gated one is skipped in its subtest) and the report holds them.
func TestRunInSubtests(t *testing.T) {
	rep := conformancetest.Run(t, echoFactory, &conformance.Options{Cases: []string{"echo", "allocation_bomb"}})
	require.NotNil(t, rep)
	require.Len(t, rep.Cases, 2)
	assert.Equal(t, conformance.StatusPass, rep.Cases[0].Status, rep.Cases[0].Reason)
	assert.Equal(t, conformance.StatusSkip, rep.Cases[1].Status)
	assert.False(t, rep.Failed())
}

// TestRunTakesAnyTB: Run accepts a testing.TB that is not a *testing.T
// (here a *testing.B) and runs every case without subtests.
func TestRunTakesAnyTB(t *testing.T) {
	var rep *conformance.Report
	testing.Benchmark(func(b *testing.B) {
		if rep != nil {
			return
		}
		rep = conformancetest.Run(b, echoFactory, &conformance.Options{Cases: []string{"echo", "allocation_bomb"}})
	})
	require.NotNil(t, rep)
	require.Len(t, rep.Cases, 2)
	assert.False(t, rep.Failed())
}

// TestRunReportsEveryFailure: a failing case is one Errorf naming it, a
// probe backend whose Close does not return is one more, and a refusal is
// a Fatal with its message and no report.
func TestRunReportsEveryFailure(t *testing.T) {
	t.Run("case", func(t *testing.T) {
		r := &recorder{TB: t}
		rep := conformancetest.Run(r, echoFactory, &conformance.Options{Cases: []string{"echo", "throw"}})
		require.NotNil(t, rep)
		assert.Empty(t, r.fatals)
		require.Len(t, r.errors, 1)
		assert.Contains(t, r.errors[0], "conformance case throw failed: ")
	})
	t.Run("probe", func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		probed := false
		factory := func() (spi.Backend, error) {
			if !probed {
				probed = true
				return echoBackend{release: release}, nil
			}
			return echoBackend{}, nil
		}
		r := &recorder{TB: t}
		rep := conformancetest.Run(r, factory, &conformance.Options{Cases: []string{"echo"}, CloseTimeout: 1})
		require.NotNil(t, rep)
		// The probe's failure comes first; with so short a close timeout
		// the echo case's own backends may fail it too.
		require.NotEmpty(t, r.errors)
		assert.Contains(t, r.errors[0], "conformance: probe: ")
	})
	t.Run("refusal", func(t *testing.T) {
		r := &recorder{TB: t}
		rep := conformancetest.Run(r, nil, nil)
		assert.Nil(t, rep)
		assert.Equal(t, []string{"conformance: nil factory"}, r.fatals)
	})
}
