package effect

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sandbank/sandbank/spi"
)

// BenchmarkEffectOverhead measures the effect's own cost per call around a
// backend that answers at once with a small value, for a small input: a Go
// map (marshalled by encoding/json) and the same input as a
// json.RawMessage (validated and copied), and the Go map with a shape.
//
//	go test -run '^$' -bench EffectOverhead -benchmem ./effect/
func BenchmarkEffectOverhead(b *testing.B) {
	inputs := []struct {
		name  string
		input any
		shape json.RawMessage
	}{
		{"goValue", map[string]int{"n": 1}, nil},
		{"rawMessage", json.RawMessage(`{"n":1}`), nil},
		// With a (cached) JSON Schema: the result is also decoded and
		// validated.
		{"goValueWithShape", map[string]int{"n": 1}, json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)},
	}
	for _, in := range inputs {
		b.Run(in.name, func(b *testing.B) {
			store := newMemoryStore()
			addr, _ := store.Put([]byte("({n: input.n + 1, ok: true})"))
			e, err := New(store, instant{spi.OK(json.RawMessage(`{"ok":true,"n":2}`))}, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			call := Call{Script: addr, Input: in.input, Shape: in.shape}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Evaluate(ctx, call); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// instant is the cheapest possible backend: it answers at once, records
// nothing and allocates nothing, so the benchmark measures the effect.
type instant struct{ out spi.Outcome }

func (instant) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, CPU: true, FreshPerRun: true}
}

func (b instant) Evaluate(context.Context, spi.Request) (spi.Outcome, error) { return b.out, nil }
