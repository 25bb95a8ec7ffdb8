package quickjs

import (
	"context"

	"github.com/tetratelabs/wazero"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Parked mode.
//
// An instance is instantiated and its _start called on a goroutine of its
// own, which it never leaves: a snapshot is only valid inside the call that
// took it. The guest boots the engine and evaluates the wrapper, which
// reads its request from stdin; at that first read (the park point) the
// host takes a snapshot of everything the run could change: the native
// call stack (wazero's experimental Snapshotter), all of linear memory,
// every mutable global (exported by the export-globals pass), the fake
// clocks and the random source. Then it parks, waiting for a run. The
// function table needs no snapshot: the static-tables proof (a pass of
// internal/wasm/rewrite that New applies) shows no table is ever written,
// and New falls back to ModeFresh for a module it refuses.
//
// A run restores all of it, writes a fresh stack canary and resumes the
// guest from the park point. A snapshot is restored once
// (internal/wasm/park): the guest's fd_read goes through the park-read
// pass's wrapper, so the restored read answers ParkRetry and the guest
// reads again, with the same arguments; that read takes the next run's
// snapshot, then is served from the run's own payload. Everything goes through wazero's public API.
// The guest's JavaScript wrapper ends every run with proc_exit, whose host
// function does not unwind: it reads the run's facts, hands them to the
// waiting Evaluate, and, when the run ended exactly as expected, parks
// again. A run that grew memory keeps its instance (growth.go). Anything
// else (a trap, a kill, a clobbered canary, memory that was refused, a
// WASI call outside the expected set, an exit code or record that is not
// a result or a thrown value, an instance that served park.MaxRestores runs)
// ends the instance; a replacement is booted off the request path.

// parked is ModeParked's runtime: run r on a parked instance of the pool
// of its memory limit, or on an instance booted for it.
func (r *run) parked(runCtx context.Context, j *job, compiled wazero.CompiledModule) (jsguest.Facts, error) {
	b := r.b
	stopJob := context.AfterFunc(runCtx, func() { j.stop(context.Cause(runCtx)) })
	defer stopJob()

	p := b.pools.For(r.Limits.MemoryBytes)
	if p != nil {
		r.SetPhase(wasmrun.PhaseInstantiate) // waiting for an instance that boots
	}
	inst, ok, err := park.Take(runCtx, p, b.core.Closed())
	switch {
	case err != nil:
		return jsguest.Facts{}, err
	case ok:
		b.reuses.Add(1)
		if b.onRun != nil {
			b.onRun(inst)
		}
		j.attach(inst, func() error { return context.Cause(runCtx) })
		inst.Jobs <- j
	default:
		r.SetPhase(wasmrun.PhaseInstantiate)
		if inst = b.startInstance(p, r.Limits.MemoryBytes, j, compiled); inst == nil {
			return jsguest.Facts{}, b.core.Closed()
		}
	}
	if !inst.Served(j.done) {
		return jsguest.Facts{}, b.core.Closed()
	}
	return j.facts, j.err
}
