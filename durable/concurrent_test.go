package durable_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
)

// TestConcurrentCallsResume: a run with calls in flight at once suspends
// at one of them; the resumption replays the ones answered before it in
// issue order and gives the value a live run gives.
func TestConcurrentCallsResume(t *testing.T) {
	const js = `
const [a, b] = await Promise.all([host.get(1), host.get(2)]);
const ok = await host.approve(a + b);
const [c, d] = await Promise.all([host.get(3), host.get(4)]);
({a, b, ok, c, d})
`
	ctx := context.Background()
	eff := newEffect(t, quickjsBackend(t), nil)
	var gets atomic.Int32
	live, err := eff.Run(ctx, effect.Call{Source: []byte(js), Host: hosts(&gets, false)})
	require.NoError(t, err)
	_, cont, err := durable.Run(ctx, eff, effect.Call{Source: []byte(js), Host: hosts(&gets, true)})
	require.ErrorIs(t, err, effect.ErrSuspended)
	gets.Store(0)
	rec, again, err := durable.Resume(ctx, eff, cont, json.RawMessage(`true`), effect.Call{Host: hosts(&gets, true)}, nil)
	require.NoError(t, err)
	assert.Nil(t, again)
	assert.JSONEq(t, string(live.Value), string(rec.Value))
	assert.Equal(t, int32(2), gets.Load(), "the two calls before the suspension are replayed")
}
