package durable_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
)

// TestEverySuspensionHasItsPendingCall: the record of a suspended run
// lists the call it waits at as suspended, every time: the host call's
// line is ended before the run is stopped, never sealed first by a
// backend that returned at once (it was, about once in a thousand runs
// on QuickJS, as canceled: a continuation without a pending call, which
// no door can resume). The race is narrow: this test catches it on some
// runs only; server's BenchmarkSuspendedRuns (10,000 suspensions, each
// answered 200) is the wider net.
func TestEverySuspensionHasItsPendingCall(t *testing.T) {
	if testing.Short() {
		t.Skip("hundreds of QuickJS runs")
	}
	eff := newEffect(t, quickjsBackend(t), nil)
	call := effect.Call{Source: []byte(`const ok = await host.approve(input); ({ok})`), Input: 1, Host: benchHosts(true)}
	for i := range 400 {
		_, cont, err := durable.Run(context.Background(), eff, call)
		require.ErrorIs(t, err, effect.ErrSuspended)
		require.NotNil(t, cont)
		_, _, ok := cont.Pending()
		require.True(t, ok, "run %d: the continuation has no pending call: %+v", i, cont.HostCalls)
	}
}
