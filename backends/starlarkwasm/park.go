package starlarkwasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/internal/hugepage"
	"github.com/sandbank/sandbank/internal/runfiles"
	"github.com/sandbank/sandbank/internal/starlarkguest"
	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Parked instances (ModeParked), after docs/notes/parked-go-guest.md; their
// life (the goroutine, the park point, the restore, fd_read and
// proc_exit) is internal/wasm/park's Core.
//
// The Go runtime boots, runs every package's init, and the guest's main
// parses its arguments (fixed per instance: the pool's key), sets its
// memory limit and reads its request from stdin. At that first read (the
// park point) the host saves everything a run can change besides the call
// stack: linear memory, every mutable global (Go's wasm registers SP,
// CTXT, g, RET0–RET3 and PAUSE, the guest-visible memory size, the stop
// check's budget: the export-globals pass exports them all), the fake
// clocks and the random source (wasmhost.Replay). Go keeps its goroutine
// stacks, heap, timers and scheduler in linear memory and its registers
// in the globals; wasm has one thread and the guest waits in fd_read, so
// nothing else of it exists. The function table needs no snapshot: the
// static-tables pass proves no table is ever written, and New falls back
// to ModeFresh for a module a pass refuses.
//
// A run restores all of it: the park point's bytes below its size and
// zeros above it up to the real size (the memory-size pass virtualises
// memory.size and memory.grow, so the guest sees the park point's size
// again), the globals, the clocks, the random source, the Allocator's
// refusal flag, and the run's own stdin, stdout and stderr.
//
// The guest ends every run with proc_exit. When the run ended exactly as
// expected (exit code 0, a result, a thrown error or the step budget,
// memory never refused, no WASI call outside the expected set, its wall
// clock not run out, fewer than park.MaxRestores runs on the instance),
// the instance parks again; anything else (a trap, a kill, running out of
// memory, an unexpected call, any other exit) ends it, and a replacement
// boots off the request path.

// parkPasses is the pass list of parked instances. The preemption pass
// comes before the park-read pass, so that the wrapper's loop, which runs
// once more after every restore, takes nothing off the stop check's
// budget. The stack pass does not apply: Go has no C stack (its goroutine
// stacks are in its heap, with the runtime's own overflow check).
var parkPasses = []wasmrewrite.Pass{
	wasmrewrite.MemorySizePass,
	wasmrewrite.PreemptPass,
	wasmrewrite.ParkReadPass,
	wasmrewrite.ExportGlobalsPass,
	wasmrewrite.StaticTablesPass,
}

// poolKey is what an instance's arguments are made of besides the
// backend's options: its memory limit and whether the guest sends log
// records.
type poolKey struct {
	memoryBytes int64
	logs        bool
}

// args are the guest's arguments for an instance of key k.
func (b *Backend) args(k poolKey) []string {
	return append([]string{"guest"}, starlarkguest.Args(b.maxSteps, b.maxResult, k.memoryBytes, k.logs)...)
}

// instance is one module instance and its park point; its Core is its
// life (internal/wasm/park).
type instance struct {
	park.Core[*instance, *job, facts]
	b        *Backend
	key      poolKey
	compiled wazero.CompiledModule

	replay  *wasmhost.Replay
	mod     api.Module
	globals wasmhost.Globals

	// The park point, besides the snapshot.
	image      []byte // linear memory below the park point's size
	globalVals []uint64
	replayAt   wasmhost.ReplayState
}

// job is one run on an instance.
type job struct {
	ctx     context.Context // the run's: the stop check stops the guest when it ends
	r       *wasmrun.Run
	stdin   *countingReader
	stdout  *wasmguest.Stdout
	stderrW io.Writer // the log records to the request's sink, the rest to stderr
	stderr  *wasmguest.Capped
	files   *runfiles.Set // the run's files, which stdin serves

	done chan struct{}
	f    facts
	err  error
}

// startInstance starts an instance on a goroutine of its own, serving j
// first (nil for a background boot), or returns nil after Close.
func (b *Backend) startInstance(p *pool, key poolKey, j *job, compiled wazero.CompiledModule) *instance {
	if b.core.Admit(&b.instances) != nil {
		return nil
	}
	b.boots.Add(1)
	inst := &instance{b: b, key: key, compiled: compiled, replay: wasmhost.NewReplay()}
	inst.Init(inst, b.core.Life(), p, wasmhost.NewAllocator(uint64(key.memoryBytes)), j)
	inst.Retaken = func() {
		if b.retaken != nil {
			b.retaken(inst)
		}
	}
	if j != nil {
		j.r.SetPhase(wasmrun.PhaseBoot)
	}
	inst.Start(b.instances.Done)
	return inst
}

// Instantiate implements park.Guest.
func (inst *instance) Instantiate(ctx context.Context) (api.Module, error) {
	cfg := inst.replay.Configure(wazero.NewModuleConfig()).
		WithName("").
		WithArgs(inst.b.args(inst.key)...).
		WithStartFunctions().
		WithStdout(inst.Writer(func(j *job) io.Writer { return j.stdout })).
		WithStderr(inst.Writer(func(j *job) io.Writer { return j.stderrW }))
	mod, err := inst.b.peng.rt.InstantiateModule(ctx, inst.compiled, cfg)
	if err != nil {
		return nil, fmt.Errorf("starlarkwasm: instantiate: %w", err)
	}
	return mod, nil
}

// Boot implements park.Guest.
func (inst *instance) Boot(ctx context.Context, mod api.Module) (context.Context, api.Function, error) {
	inst.mod = mod
	var err error
	if inst.globals, err = wasmhost.ExportedGlobals(mod); err != nil {
		return nil, nil, fmt.Errorf("starlarkwasm: parked mode: %w", err)
	}
	start := mod.ExportedFunction("_start")
	if mod.Memory() == nil || start == nil {
		return nil, nil, errors.New("starlarkwasm: the module lacks its memory or _start export")
	}
	return ctx, start, nil
}

// Ended implements park.Guest: the run's facts when the instance ended
// during it.
func (inst *instance) Ended(j *job, callErr error) facts {
	f := inst.facts(j)
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		f.Ending = endExit
	case errors.As(callErr, &exit):
		f.Ending, f.ExitCode = endExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && j.ctx.Err() != nil {
			f.Ending = endKilled
		}
	default:
		f.Ending, f.Trap = endTrap, wasmrun.FirstLine(callErr.Error())
	}
	return f
}

// Fail implements park.Guest.
func (inst *instance) Fail(j *job, err error) {
	j.err = err
	close(j.done)
}

// facts reads what the run of j left behind, but its ending.
func (inst *instance) facts(j *job) facts {
	return facts{
		Record:      j.stdout.Record(),
		InputRead:   j.stdin.n.Load() > 0,
		Started:     j.stdout.Started(),
		OOM:         inst.Mem.Refused() || bytes.Contains(j.stderr.Bytes(), []byte("fatal error: out of memory")),
		Stack:       bytes.Contains(j.stderr.Bytes(), []byte("fatal error: stack overflow")),
		WallExpired: j.r.WallClockExpired(),
		Late:        j.r.Late(),
		Stderr:      j.stderr,
		Files:       j.files,
	}
}

// Deliver implements park.Guest.
func (inst *instance) Deliver(j *job, f facts) {
	j.f = f
	if inst.b.observe != nil {
		inst.b.observe(f)
	}
	close(j.done)
}

// Save implements park.Guest: at the park point, linear memory, the
// globals, the clocks and the random source.
func (inst *instance) Save(ctx context.Context, mod api.Module) {
	memory := mod.Memory()
	buf, ok := memory.Read(0, memory.Size())
	if !ok {
		park.Exit(ctx, mod, 1)
	}
	inst.image = hugepage.Clone(buf)
	inst.globalVals = inst.globals.Save()
	inst.replayAt = inst.replay.Save()
}

// Restore implements park.Guest: the park point's bytes below its size
// and zeros above it, the globals, the clocks and the random source.
func (inst *instance) Restore(mod api.Module, j *job) bool {
	memory := mod.Memory()
	parkSize := uint32(len(inst.image))
	buf, ok := memory.Read(0, parkSize)
	if !ok { // a wasm memory never shrinks
		return false
	}
	copy(buf, inst.image)
	inst.Mem.Zero(uint64(parkSize), uint64(memory.Size()))
	inst.globals.Restore(inst.globalVals)
	inst.replay.Restore(inst.replayAt)
	if inst.b.restored != nil {
		inst.b.restored(inst)
	}
	j.r.SetPhase(wasmrun.PhaseInput)
	return true
}

// Stdin implements park.Guest.
func (inst *instance) Stdin(j *job) io.Reader { return j.stdin }

// Exited implements park.Guest: the run ended at its proc_exit with code,
// and the instance parks again when the run ended as expected.
func (inst *instance) Exited(_ api.Module, j *job, code uint32) (facts, bool) {
	f := inst.facts(j)
	f.Ending, f.ExitCode = endExit, code
	clean := f.Record.Kind == wasmguest.RecResult || f.Record.Kind == wasmguest.RecThrew || f.Record.Kind == wasmguest.RecCPU
	keep := code == 0 && clean && !f.OOM && !f.Stack && !f.WallExpired && !f.Late &&
		inst.Restores < inst.b.maxRestores && j.ctx.Err() == nil
	return f, keep
}
