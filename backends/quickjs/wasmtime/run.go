//go:build cgo

package wasmtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	wt "github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/sandbank/sandbank/backends/quickjs/internal/jsguest"
	"github.com/sandbank/sandbank/internal/runfiles"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
	"github.com/sandbank/sandbank/spi"
)

// Evaluate implements spi.Backend: one new store and instance per call
// (the run's lifecycle is internal/wasm/run's).
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	return b.core.Evaluate(ctx, req)
}

// run is the state of one evaluation on its store; the WASI shadows reach
// it through the store's data.
type run struct {
	*wasmrun.Run
	b *Backend

	store   *wt.Store
	stdin   *wasmguest.Stdin
	files   *runfiles.Set
	stdout  *wasmguest.Stdout
	stderr  *wasmguest.Capped
	stderrW io.Writer // stderr, with the script's log records taken out (jsguest.Stderr)

	clockReads atomic.Int64
	monoReads  atomic.Int64
	inputOnce  sync.Once
	inputRead  atomic.Bool
	fuelErr    error // set on the guest's thread, read after the call
	// stackOverflow is set by the stack pass's check (stackOverflow).
	stackOverflow atomic.Bool
}

// ran is what a run left behind: the facts of the guest's call, the fuel
// it had left and its memory's size, or an outcome reached before the
// guest ran.
type ran struct {
	r        *run
	facts    jsguest.Facts
	fuelLeft uint64
	memory   int64
	early    *spi.Outcome
}

// inputStarts is called on the guest's first read of stdin: the engine
// booted.
func (r *run) inputStarts() {
	r.inputOnce.Do(func() {
		r.inputRead.Store(true)
		r.SetPhase(wasmrun.PhaseInput)
	})
}

// engineRuntime is the backend's runtime of internal/wasm/run: a new wasmtime
// store and instance per run.
type engineRuntime Backend

// Module implements wasmrun.Runtime.
func (rt *engineRuntime) Module(ctx context.Context) (*wt.Module, error) {
	return (*Backend)(rt).module(ctx)
}

// Run implements wasmrun.Runtime.
func (rt *engineRuntime) Run(runCtx context.Context, core *wasmrun.Run, mod *wt.Module, req spi.Request) (ran, error) {
	b := (*Backend)(rt)
	r := &run{Run: core, b: b}
	nonce, err := wasmguest.NewNonce()
	if err != nil {
		return ran{}, err
	}
	canary, err := jsguest.NewCanary()
	if err != nil {
		return ran{}, err
	}
	// The script's fuel is its budget from its start on.
	if b.rt.fuel {
		r.OnStart(func() { r.fuelErr = r.store.SetFuel(b.set.fuel) })
	}
	r.stdout = r.NewStdout(nonce, jsguest.StdoutLimit(r.Limits.MemoryBytes))
	r.stderr = wasmguest.NewCapped(b.set.MaxStderrBytes)
	r.stderrW = wasmguest.NewStderr(nonce, req.Logs, r.stderr)
	// stdin: the payload, then the replies to the guest's host calls.
	r.stdin = wasmguest.NewStdin(runCtx, jsguest.Payload(nonce, req.Script, req.Input, req.Host != nil), r.stdout, req.Host)
	// The run's files, which stdin serves (wasmguest's files.go).
	r.files = runfiles.New(req)
	r.stdin.SetFiles(r.files)

	r.SetPhase(wasmrun.PhaseInstantiate)
	wasi := wt.NewWasiConfig() // no preopens, no environment, stdio shadowed
	defer wasi.Close()
	wasi.SetArgv(jsguest.Args(r.Limits.MemoryBytes))
	store := wt.NewStoreWithData(b.rt.engine, r)
	r.store = store
	stop := newStopFlag(b.rt.engine)
	defer stop.free() // after the store is closed (deferred below, so run first)
	defer store.Close()
	store.SetWasi(wasi)
	store.Limiter(r.Limits.MemoryBytes, -1, -1, -1, -1)
	if b.rt.fuel {
		if err := store.SetFuel(bootFuel); err != nil {
			return ran{}, fmt.Errorf("wasmtime: fuel: %s", firstLine(err.Error()))
		}
	}
	stop.install(store)
	// From here on, any end of runCtx (the caller, the wall clock, the
	// cold-start allowance, Close) stops the guest at once.
	stopKill := context.AfterFunc(runCtx, stop.set)
	defer stopKill()

	inst, err := b.rt.linker.Instantiate(store, mod)
	if err != nil {
		if r.Limits.MemoryBytes < initialMemoryBytes(mod) {
			// The limit is below the module's own initial memory: the
			// engine cannot even start within it.
			out := spi.Limited(spi.LimitMemory)
			return ran{r: r, early: &out}, nil
		}
		return ran{}, fmt.Errorf("wasmtime: instantiate: %s", firstLine(err.Error()))
	}
	memExt := inst.GetExport(store, "memory")
	start := inst.GetFunc(store, "_start")
	if memExt == nil || memExt.Memory() == nil || start == nil {
		return ran{}, errors.New("wasmtime: the module lacks its memory or _start export")
	}
	mem := memExt.Memory()
	data := mem.UnsafeData(store)
	if uint64(b.layout.Bottom)+jsguest.CanarySize > uint64(len(data)) {
		return ran{}, errors.New("wasmtime: the stack canary lies outside linear memory")
	}
	copy(data[b.layout.Bottom:], canary[:])

	r.SetPhase(wasmrun.PhaseBoot)
	_, callErr := start.Call(store)

	data = mem.UnsafeData(store)
	var fuelLeft uint64
	if b.rt.fuel {
		fuelLeft, _ = store.GetFuel()
	}
	facts := jsguest.Facts{
		Record:           r.stdout.Record(),
		Script:           req.Script,
		InputRead:        r.inputRead.Load(),
		Started:          r.stdout.Started(),
		CanaryIntact:     canary.Intact(data[b.layout.Bottom : b.layout.Bottom+jsguest.CanarySize]),
		MemoryRefused:    nearLimit(uint64(len(data)), uint64(r.Limits.MemoryBytes)),
		WallClockExpired: r.WallClockExpired(),
		Late:             r.Late(),
	}
	facts.Ending, facts.ExitCode, facts.Trap = ending(callErr, runCtx.Err() != nil)
	facts.StackExhausted = facts.Ending == jsguest.EndTrap &&
		(r.stackOverflow.Load() || strings.Contains(callErr.Error(), "call stack exhausted"))
	if b.observe != nil {
		b.observe(r, facts, fuelLeft)
	}
	return ran{r: r, facts: facts, fuelLeft: fuelLeft, memory: int64(len(data))}, nil
}

// Conclude implements wasmrun.Runtime.
func (rt *engineRuntime) Conclude(core *wasmrun.Run, x ran, req spi.Request) (spi.Outcome, error) {
	if x.early != nil {
		return *x.early, nil
	}
	r, facts := x.r, x.facts
	if r.files.Exceeded() {
		// The host's finding: a write went past a bound, and the guest
		// was told to end the run.
		return spi.Limited(spi.LimitFiles), nil
	}
	if r.fuelErr != nil {
		return spi.Outcome{}, fmt.Errorf("wasmtime: fuel: %s", firstLine(r.fuelErr.Error()))
	}
	if r.b.rt.fuel && facts.Started && facts.Ending == jsguest.EndTrap && x.fuelLeft == 0 && facts.Record.Kind == 0 {
		// Out of fuel. Read from the store, not from the trap code: the
		// binding's wasmtime.OutOfFuel (11) is not the C API's code for
		// it (12).
		return spi.Limited(spi.LimitCPU), nil
	}
	out, err := jsguest.Interpret(facts, core.Phase())
	if err != nil && !facts.Started {
		return spi.Outcome{}, fmt.Errorf("%w; stderr: %q", err, r.stderr.Head(256))
	}
	out = r.files.Conclude(out)
	if err == nil && req.Logs != nil {
		out.Stats = r.stats(facts, x.fuelLeft, x.memory)
	}
	return out, err
}

// stats are the run's figures, asked for by the effect's log sink: the
// start-up and the script's time, the fuel the script spent (it gets
// Options.Fuel when it starts; none without a budget), and the linear memory's size at the end
// (wasm memory never shrinks: the high-water mark).
func (r *run) stats(f jsguest.Facts, fuelLeft uint64, memory int64) spi.Stats {
	s := spi.Stats{MemoryPeakBytes: memory}
	if startup, script, ok := r.Stats(); f.Started && ok {
		s.Startup, s.ScriptTime = startup, script
		if r.b.rt.fuel && r.fuelErr == nil && fuelLeft <= r.b.set.fuel {
			s.CPUUnit, s.CPUUnits = "fuel", int64(r.b.set.fuel-fuelLeft)
		}
	}
	return s
}

// ending classifies how _start returned. stopping is true when the run
// was being stopped (its stop flag set): an error that is not an exit is
// then the stop, and its text (a backtrace, with RUST_BACKTRACE set) is
// not even formatted.
func ending(err error, stopping bool) (jsguest.Ending, uint32, string) {
	if err == nil {
		return jsguest.EndExit, 0, ""
	}
	var werr *wt.Error
	if errors.As(err, &werr) {
		if code, ok := werr.ExitStatus(); ok {
			return jsguest.EndExit, uint32(code), ""
		}
	}
	if stopping {
		return jsguest.EndKilled, 0, interruptMessage
	}
	// A trap; an interruption nobody asked for (impossible: only a set
	// flag interrupts) is read as one too.

	return jsguest.EndTrap, 0, firstLine(err.Error())
}

// nearLimit reports whether a linear memory of size bytes stands so
// close to the limit that a refused growth is the likely reason the guest
// stopped: wasmtime's store limiter refuses silently (memory.grow returns
// -1), so the backend cannot observe the refusal itself. Within 1/16 of
// the limit, or 1 MiB, counts.
func nearLimit(size, limit uint64) bool {
	slack := max(limit/16, 1<<20)
	return size+slack > limit
}

// initialMemoryBytes is the module's declared initial linear memory.
func initialMemoryBytes(mod *wt.Module) int64 {
	for _, e := range mod.Exports() {
		if mt := e.Type().MemoryType(); mt != nil && e.Name() == "memory" {
			return int64(mt.Minimum()) * 65536
		}
	}
	return 0
}
