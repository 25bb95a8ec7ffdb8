package durable_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/durable"
	"github.com/sandbank/sandbank/effect"
)

// hundred makes 100 host calls, then asks for approval, then makes 100
// more: issue 45's target compares resuming it with running it live.
const hundred = `
let s = 0;
for (let i = 0; i < 100; i++) s += await host.get(i);
const ok = await host.approve(s);
for (let i = 0; i < 100; i++) s += await host.get(i);
({s, ok})
`

func benchHosts(suspend bool) effect.HostFuncs {
	return effect.HostFuncs{
		"get": func(_ context.Context, args json.RawMessage) (any, error) { return args, nil },
		"approve": func(context.Context, json.RawMessage) (any, error) {
			if suspend {
				return nil, effect.Suspend("approve")
			}
			return true, nil
		},
	}
}

// BenchmarkLive: the script answered live, start to end.
func BenchmarkLive(b *testing.B) {
	eff := newEffect(b, quickjsBackend(b), nil)
	call := effect.Call{Source: []byte(hundred), Host: benchHosts(false)}
	for b.Loop() {
		_, err := eff.Run(context.Background(), call)
		require.NoError(b, err)
	}
}

// BenchmarkResume: the same script resumed after its 100th call: the 100
// calls replayed from the log, the approval answered, 100 calls live.
func BenchmarkResume(b *testing.B) {
	eff := newEffect(b, quickjsBackend(b), nil)
	_, cont, err := durable.Run(context.Background(), eff, effect.Call{Source: []byte(hundred), Host: benchHosts(true)})
	require.ErrorIs(b, err, effect.ErrSuspended)
	call := effect.Call{Host: benchHosts(true)}
	for b.Loop() {
		rec, _, err := durable.Resume(context.Background(), eff, cont, json.RawMessage(`true`), call, nil)
		require.NoError(b, err)
		require.JSONEq(b, `{"s":9900,"ok":true}`, string(rec.Value))
	}
}
