package effect

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sandbank/sandbank/spi"
)

// BenchmarkEffectOverhead measures the effect's own cost per call around a
// backend that answers at once with a small value, for a small input.
func BenchmarkEffectOverhead(b *testing.B) {
	store := NewMemoryStore()
	addr, _ := store.Put([]byte("input.n + 1"))
	e, err := New(store, instant{spi.OK(json.RawMessage(`{"n":2,"ok":true}`))}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	call := Call{Script: addr, Input: map[string]int{"n": 1}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// instant is the cheapest possible backend: it answers at once, records
// nothing and allocates nothing, so the benchmark measures the effect.
type instant struct{ out spi.Outcome }

func (instant) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, CPU: true, FreshPerRun: true}
}

func (b instant) Evaluate(context.Context, spi.Request) (spi.Outcome, error) { return b.out, nil }
