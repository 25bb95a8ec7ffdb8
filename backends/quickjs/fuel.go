package quickjs

import (
	"context"
	"sync/atomic"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
)

// The CPU budget (Options.Fuel). The stop check counts work in units (a
// loop iteration, a call, a KiB of bulk memory work; see
// internal/wasm/rewrite), and reports at every visit how much of its last
// grant is left; a meter turns that into fuel spent. Counting starts when
// the guest first reads its request (the park point, in parked mode), so
// the engine's boot is not charged, and a script spends the same fuel on
// every run of the same mode: the count is a function of the code that
// ran, never of time. The guest visits the host when a grant is spent,
// and grants are never larger than the fuel left, so a run stops at the
// first visit after its fuel is spent, to the unit but for the last bulk
// operation's charge.

// meter is the fuel of one run. It is touched only by the goroutine
// running the guest, except exhausted, which the run reads afterwards.
type meter struct {
	fuel    int64 // the run's budget; 0: no budget
	left    int64 // fuel left, once armed
	armed   bool  // the guest has read its request
	granted int32 // the budget the last visit granted

	exhausted *atomic.Bool // set when the fuel ran out (the run's)
}

var _ wasmhost.Budget = (*meter)(nil)

// withMeter returns ctx carrying m, for the stop check to find.
func withMeter(ctx context.Context, m *meter) context.Context {
	return wasmhost.WithBudget(ctx, m)
}

// arm starts counting, with the fuel of a run whose exhaustion flag is
// out.
func (m *meter) arm(out *atomic.Bool) {
	m.armed, m.left, m.exhausted = true, m.fuel, out
}

// Visit implements wasmhost.Budget: it accounts for a visit of the guest
// whose budget stood at budget, and returns the next grant, or false when
// the fuel is spent (the stop check then ends the call).
func (m *meter) Visit(budget int32) (int32, bool) {
	if m.fuel == 0 || !m.armed {
		m.granted = wasmhost.StopGrant
		return wasmhost.StopGrant, true
	}
	m.left -= int64(m.granted) - int64(budget)
	if m.left <= 0 {
		m.exhausted.Store(true)
		return 0, false
	}
	m.granted = int32(min(wasmhost.StopGrant, m.left))
	return m.granted, true
}
