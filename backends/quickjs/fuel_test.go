package quickjs

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/spi"
)

// TestFuelIsDeterministic: the same script under the same fuel ends the
// same way on every run, in both modes; just under the fuel it needs it
// is the typed limit cpu, at it a value.
func TestFuelIsDeterministic(t *testing.T) {
	script := []byte("let s = 0; for (let i = 0; i < 20000; i++) s += i; s")
	for _, mode := range []Mode{ModeParked, ModeFresh} {
		t.Run(mode.String(), func(t *testing.T) {
			run := func(fuel uint64) spi.Outcome {
				b := newBackend(t, &Options{Mode: mode, Fuel: fuel, PoolSize: 1, ColdStartAllowance: 10 * time.Minute})
				return eval(t, b, string(script), "null", spi.Limits{WallClock: time.Minute})
			}
			// Find the fuel the script needs, by bisection.
			lo, hi := uint64(1), uint64(1<<24)
			require.Equal(t, spi.KindOK, run(hi).Kind, "the script must finish on %d units", hi)
			for hi-lo > 1 {
				mid := (lo + hi) / 2
				if run(mid).Kind == spi.KindOK {
					hi = mid
				} else {
					lo = mid
				}
			}
			t.Logf("%s: the script needs %d units", mode, hi)
			for range 3 {
				assert.Equal(t, spi.Limited(spi.LimitCPU), run(lo))
				assert.Equal(t, spi.KindOK, run(hi).Kind)
			}
		})
	}
}

// TestMeter checks the accounting: grants never exceed the fuel left, the
// boot (before arm) is free, and the fuel runs out to the unit.
func TestMeter(t *testing.T) {
	var out atomic.Bool
	m := &meter{fuel: 10_000}
	next, ok := m.Visit(0)
	require.True(t, ok)
	require.EqualValues(t, wasmhost.StopGrant, next, "before arm, a grant is a whole one")
	m.arm(&out)
	spent := int64(0)
	for {
		budget := int32(0) // the guest spent the whole grant
		spent += int64(m.granted)
		next, ok = m.Visit(budget)
		if !ok {
			break
		}
		require.LessOrEqual(t, int64(next), m.left)
	}
	assert.True(t, out.Load())
	assert.EqualValues(t, 10_000, spent, "the fuel, to the unit (the grant running when the meter was armed included)")
}
