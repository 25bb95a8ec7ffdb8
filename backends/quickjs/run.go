package quickjs

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/tetratelabs/wazero"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// A run's lifecycle is internal/wasm/run's (the engine's core):
//
//	Evaluate → core: limits, the run's context → compiledModule →
//	the cold-start allowance → Run: newJob (nonce, canary, payload,
//	sinks) → the mode's runtime (fresh.go or parked mode's
//	pool.go on internal/wasm/park, instance.go), which returns the facts of the guest call →
//	core: the caller's cancellation and the run's own stops → Conclude
//	(facts → outcome).
//
// A runtime only reaches the guest and reads what it left behind; the
// phases, timers, cancellation and interpretation are in the core and in
// jsguest.

// Evaluate implements spi.Backend: a parked instance restored to its park
// point (ModeParked) or a new module instance (ModeFresh) per call.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	return b.core.Evaluate(ctx, req)
}

// newCore returns the run lifecycle of b, over its runtime.
func newCore(b *Backend) *wasmrun.Engine[wazero.CompiledModule, ran] {
	return wasmrun.New("quickjs",
		wasmrun.Bounds{DefaultWallClock: DefaultWallClock, DefaultMemoryBytes: DefaultMemoryBytes, MaxMemoryBytes: MaxMemoryBytes},
		b.set.ColdStart, (*engineRuntime)(b))
}

// run is the state of one evaluation: the core's, and the fuel meter's
// verdict.
type run struct {
	*wasmrun.Run
	b      *Backend
	cpuOut atomic.Bool // the run's fuel ran out (fuel.go)
}

// ran is what a run left behind: its facts and its job (the sinks).
type ran struct {
	r     *run
	facts jsguest.Facts
	job   *job
}

// engineRuntime is the backend's runtime of internal/wasm/run: a fresh
// instance or a parked one, by the backend's mode.
type engineRuntime Backend

// Module implements wasmrun.Runtime.
func (rt *engineRuntime) Module(ctx context.Context) (wazero.CompiledModule, error) {
	return (*Backend)(rt).compiledModule(ctx)
}

// Run implements wasmrun.Runtime: the run in the backend's mode.
func (rt *engineRuntime) Run(runCtx context.Context, core *wasmrun.Run, compiled wazero.CompiledModule, req spi.Request) (ran, error) {
	b := (*Backend)(rt)
	r := &run{Run: core, b: b}
	j, err := r.newJob(req)
	if err != nil {
		return ran{}, err
	}
	// The guest's stdin: the payload, then the replies to its host calls,
	// asked of the broker with the run's context.
	stdin := wasmguest.NewStdin(runCtx, j.payload, j.stdout, req.Host)
	stdin.SetFiles(j.files)
	j.stdin = stdin

	var f jsguest.Facts
	if b.set.mode == ModeParked {
		f, err = r.parked(runCtx, j, compiled)
	} else {
		f, err = r.fresh(runCtx, j, compiled)
	}
	if err != nil {
		return ran{}, err
	}
	f.Script = req.Script
	f.WallClockExpired = r.WallClockExpired()
	f.Late = r.Late()
	if b.observe != nil {
		b.observe(f)
	}
	return ran{r: r, facts: f, job: j}, nil
}

// Conclude implements wasmrun.Runtime: the facts of a run read as its
// outcome.
func (rt *engineRuntime) Conclude(core *wasmrun.Run, x ran, req spi.Request) (spi.Outcome, error) {
	b, r, facts := (*Backend)(rt), x.r, x.facts
	if x.job.files.Exceeded() {
		// The host's finding: a write went past a bound, and the guest
		// was told to end the run.
		return spi.Limited(spi.LimitFiles), nil
	}
	if r.cpuOut.Load() && facts.Started && facts.Record.Kind == 0 {
		return spi.Limited(spi.LimitCPU), nil
	}
	if !b.set.stopCheck && !b.set.wazeroClose && facts.WallClockExpired && facts.Started {
		// Soft wall clock: the script was not stopped, but ran past it.
		return spi.Limited(spi.LimitWallClock), nil
	}
	out, err := jsguest.Interpret(facts, core.Phase())
	if err != nil && !facts.Started {
		return spi.Outcome{}, fmt.Errorf("%w; stderr: %q", err, x.job.stderr.Head(256))
	}
	out = x.job.files.Conclude(out)
	if err == nil && req.Logs != nil {
		out.Stats = spi.Stats{MemoryPeakBytes: x.job.memPeak}
		if startup, script, ok := r.Stats(); ok {
			out.Stats.Startup, out.Stats.ScriptTime = startup, script
		}
	}
	return out, err
}

func (b *Backend) argsFor(memoryBytes int64) []string {
	if b.args != nil {
		return b.args(memoryBytes)
	}
	return jsguest.Args(memoryBytes)
}
