package starlarkwasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	wasmguest "github.com/sandbank/sandbank/internal/wasm/guest"
	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	"github.com/sandbank/sandbank/internal/wasm/park"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
	wasmrun "github.com/sandbank/sandbank/internal/wasm/run"
)

// Parked instances (ModeParked), after docs/notes/parked-go-guest.md.
//
// An instance is instantiated and its _start called on a goroutine of its
// own, which it never leaves: a snapshot is valid only inside the call
// that took it. The Go runtime boots, runs every package's init, and the
// guest's main parses its arguments (fixed per instance: the pool's
// key), sets its memory limit and reads its request from stdin. At that
// first read (the park point) the host saves everything a run can change:
// the native call stack (wazero's experimental Snapshotter), linear
// memory, every mutable global (Go's wasm registers SP, CTXT, g,
// RET0–RET3 and PAUSE, the guest-visible memory size, the stop check's
// budget: the export-globals pass exports them all), the fake clocks and
// the random source (wasmhost.Replay). Go keeps its goroutine stacks,
// heap, timers and scheduler in linear memory and its registers in the
// globals; wasm has one thread and the guest waits in fd_read, so nothing
// else of it exists. The function table needs no snapshot: the
// static-tables pass proves no table is ever written, and New falls back
// to ModeFresh for a module a pass refuses.
//
// A run restores all of it: the park point's bytes below its size and
// zeros above it up to the real size (the memory-size pass virtualises
// memory.size and memory.grow, so the guest sees the park point's size
// again), the globals, the clocks, the random source, the Allocator's
// refusal flag, and the run's own stdin, stdout and stderr. A snapshot is
// restored once: the park-read pass wraps fd_read in a loop that calls
// it again while it answers ParkRetry, so the restored read answers
// ParkRetry and the guest reads again with the same arguments; that read
// (retake) takes the next run's snapshot, then is served from the run's
// payload.
//
// The guest ends every run with proc_exit. When the run ended exactly as
// expected (exit code 0, a result, a thrown error or the step budget,
// memory never refused, no WASI call outside the expected set, its wall
// clock not run out, fewer than maxRestores runs on the instance), the
// instance parks again; anything else (a trap, a kill, running out of
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

// maxRestores is how many runs a parked instance serves before it is
// replaced: wazero v1.12.0 clones a snapshot's stack with 16 bytes to
// spare, so each snapshot is longer than the one it was taken from.
const maxRestores = 2048

// poolKey is what an instance's arguments are made of besides the
// backend's options: its memory limit and whether the guest sends log
// records.
type poolKey struct {
	memoryBytes int64
	logs        bool
}

// args are the guest's arguments for an instance of key k.
func (b *Backend) args(k poolKey) []string {
	logs := "0"
	if k.logs {
		logs = "1"
	}
	return []string{"guest",
		strconv.FormatInt(b.maxSteps, 10),
		strconv.FormatInt(b.maxResult, 10),
		strconv.FormatInt(goMemoryLimit(k.memoryBytes), 10),
		logs}
}

// instance is one module instance and its park point.
type instance struct {
	b    *Backend
	pool *pool // nil for an instance booted for one run beyond the pools
	key  poolKey
	seat park.Seat

	ctx  context.Context // the instance's life: ends with the backend's
	kill context.CancelCauseFunc

	mem     *wasmhost.Allocator
	replay  *wasmhost.Replay
	mod     api.Module
	globals wasmhost.Globals

	// The park point.
	snap       experimental.Snapshot
	image      []byte // linear memory below the park point's size
	globalVals []uint64
	replayAt   wasmhost.ReplayState
	retaking   bool
	restores   int

	cur       *job          // the run being served; only the instance's goroutine changes it once started
	jobs      chan *job     // the next run (buffered: one)
	ready     chan struct{} // closed at the first park, or when the instance ends
	readyOnce sync.Once
	dead      chan struct{}
}

// job is one run on an instance.
type job struct {
	ctx     context.Context // the run's: the stop check stops the guest when it ends
	r       *wasmrun.Run
	stdin   *countingReader
	stdout  *wasmguest.Stdout
	stderrW io.Writer // the log records to the request's sink, the rest to stderr
	stderr  *wasmguest.Capped

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
	ctx, kill := context.WithCancelCause(b.core.Life())
	inst := &instance{
		b: b, pool: p, key: key,
		ctx: ctx, kill: kill,
		mem:    wasmhost.NewAllocator(uint64(key.memoryBytes)),
		replay: wasmhost.NewReplay(),
		cur:    j,
		jobs:   make(chan *job, 1),
		ready:  make(chan struct{}),
		dead:   make(chan struct{}),
	}
	if j != nil {
		j.r.SetPhase(wasmrun.PhaseBoot)
		if p != nil {
			p.Adopt(inst) // before its goroutine can put it back
		}
	}
	go inst.main(compiled)
	return inst
}

// writer sends the guest's stdout or stderr to the current run.
type writer struct {
	inst   *instance
	stdout bool
}

func (w writer) Write(p []byte) (int, error) {
	j := w.inst.cur
	switch {
	case j == nil:
	case w.stdout:
		return j.stdout.Write(p)
	default:
		return j.stderrW.Write(p)
	}
	return len(p), nil
}

// main instantiates the module and calls _start, which returns only when
// the instance ends.
func (inst *instance) main(compiled wazero.CompiledModule) {
	b := inst.b
	defer b.instances.Done()
	defer close(inst.dead)
	defer inst.kill(nil)
	parked := false
	defer func() {
		inst.readyOnce.Do(func() { close(inst.ready) })
		if inst.pool != nil {
			inst.pool.Ended(inst, parked)
		}
	}()
	cfg := inst.replay.Configure(wazero.NewModuleConfig()).
		WithName("").
		WithArgs(b.args(inst.key)...).
		WithStartFunctions().
		WithStdout(writer{inst: inst, stdout: true}).
		WithStderr(writer{inst: inst})
	ctx := experimental.WithMemoryAllocator(inst.ctx, inst.mem)
	defer inst.mem.Release() // after the module is closed (deferred below, so run first)
	mod, err := b.peng.rt.InstantiateModule(ctx, compiled, cfg)
	if err != nil {
		inst.fail(fmt.Errorf("starlarkwasm: instantiate: %w", err))
		return
	}
	defer mod.Close(context.Background())
	// The waiting caller goes first, before the teardown.
	defer runtime.Gosched()
	inst.mod = mod
	if inst.globals, err = wasmhost.ExportedGlobals(mod); err != nil {
		inst.fail(fmt.Errorf("starlarkwasm: parked mode: %w", err))
		return
	}
	start := mod.ExportedFunction("_start")
	if mod.Memory() == nil || start == nil {
		inst.fail(errors.New("starlarkwasm: the module lacks its memory or _start export"))
		return
	}
	ctx = park.WithInstance(experimental.WithSnapshotter(ctx), inst)
	_, callErr := start.Call(ctx)
	parked = inst.snap != nil

	j := inst.cur
	if j == nil {
		return
	}
	inst.cur = nil
	f := inst.facts(j)
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		f.ending = endExit
	case errors.As(callErr, &exit):
		f.ending, f.exitCode = endExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && j.ctx.Err() != nil {
			f.ending = endKilled
		}
	default:
		f.ending, f.trap = endTrap, wasmrun.FirstLine(callErr.Error())
	}
	if inst.pool != nil && parked {
		inst.pool.Leaving(inst) // the replacement boots before the caller's next run
	}
	inst.deliver(j, f)
}

// fail ends a run that could not reach the guest.
func (inst *instance) fail(err error) {
	if j := inst.cur; j != nil {
		inst.cur = nil
		j.err = err
		close(j.done)
	}
}

// facts reads what the run of j left behind, but its ending.
func (inst *instance) facts(j *job) facts {
	return facts{
		record:      j.stdout.Record(),
		inputRead:   j.stdin.n.Load() > 0,
		started:     j.stdout.Started(),
		oom:         inst.mem.Refused() || bytes.Contains(j.stderr.Bytes(), []byte("fatal error: out of memory")),
		stack:       bytes.Contains(j.stderr.Bytes(), []byte("fatal error: stack overflow")),
		wallExpired: j.r.WallClockExpired(),
		late:        j.r.Late(),
		stderr:      j.stderr,
	}
}

func (inst *instance) deliver(j *job, f facts) {
	j.f = f
	if inst.b.observe != nil {
		inst.b.observe(f)
	}
	close(j.done)
}

// parkPoint takes the snapshot and everything outside it that a run can
// change, then serves the run the instance booted for, or parks in its
// pool and waits for one.
func (inst *instance) parkPoint(ctx context.Context, mod api.Module) {
	snap := experimental.GetSnapshotter(ctx).Snapshot()
	memory := mod.Memory()
	buf, ok := memory.Read(0, memory.Size())
	if !ok {
		park.Exit(ctx, mod, 1)
	}
	inst.snap = snap
	inst.image = slices.Clone(buf)
	inst.globalVals = inst.globals.Save()
	inst.replayAt = inst.replay.Save()
	inst.park(ctx, mod)
}

// park waits for the instance's next run and restores the park point
// for it, or ends the instance. It does not return to the guest's code
// of the run that ended: the snapshot's Restore unwinds to the park point.
func (inst *instance) park(ctx context.Context, mod api.Module) {
	j := inst.cur
	if j == nil {
		pooled := inst.pool != nil && inst.pool.Put(inst)
		inst.readyOnce.Do(func() { close(inst.ready) })
		if !pooled {
			park.Exit(ctx, mod, 0)
		}
		select {
		case j = <-inst.jobs:
		case <-inst.ctx.Done():
			park.Exit(ctx, mod, 0)
		}
	}
	inst.readyOnce.Do(func() { close(inst.ready) })
	inst.resume(mod, j)
}

// resume restores the park point and resumes the guest with run j.
func (inst *instance) resume(mod api.Module, j *job) {
	memory := mod.Memory()
	parkSize := uint32(len(inst.image))
	buf, ok := memory.Read(0, parkSize)
	if !ok { // a wasm memory never shrinks
		inst.cur = j
		park.Exit(context.Background(), mod, 1)
	}
	copy(buf, inst.image)
	inst.mem.Zero(uint64(parkSize), uint64(memory.Size()))
	inst.globals.Restore(inst.globalVals)
	inst.replay.Restore(inst.replayAt)
	inst.mem.ClearRefused()
	inst.seat.ClearUnexpected()
	if inst.b.restored != nil {
		inst.b.restored(inst)
	}
	inst.cur = j
	j.r.SetPhase(wasmrun.PhaseInput)
	inst.restores++
	inst.retaking = true
	inst.snap.Restore([]uint64{uint64(wasmrewrite.ParkRetry)})
}

// retake takes the snapshot the next run restores, in the read the guest
// repeats after a restore: the guest stands at its park point again, with
// the memory and globals resume wrote back, and no code but the
// park-read wrapper's loop has run since.
func (inst *instance) retake(ctx context.Context) {
	inst.snap = experimental.GetSnapshotter(ctx).Snapshot()
	inst.retaking = false
	if inst.b.retaken != nil {
		inst.b.retaken(inst)
	}
}

// exited ends the current run at its proc_exit with code, and parks the
// instance again when the run ended as expected; otherwise the instance
// ends.
func (inst *instance) exited(ctx context.Context, mod api.Module, code uint32) {
	j := inst.cur
	f := inst.facts(j)
	f.ending, f.exitCode = endExit, code
	clean := f.record.Kind == wasmguest.RecResult || f.record.Kind == wasmguest.RecThrew || f.record.Kind == wasmguest.RecCPU
	keep := code == 0 && clean && !f.oom && !f.stack && !f.wallExpired && !f.late &&
		!inst.seat.Unexpected() && inst.restores < inst.b.maxRestores &&
		j.ctx.Err() == nil && inst.ctx.Err() == nil
	inst.cur = nil
	// Back in the pool before the run's caller learns its result, so that
	// the caller's next run finds the instance parked.
	keep = keep && inst.pool != nil && inst.pool.Put(inst)
	if !keep && inst.pool != nil {
		inst.pool.Leaving(inst) // the replacement boots before the caller's next run
	}
	inst.deliver(j, f)
	if !keep {
		park.Exit(ctx, mod, code)
	}
	select {
	case next := <-inst.jobs:
		inst.resume(mod, next)
	case <-inst.ctx.Done():
		park.Exit(ctx, mod, code)
	}
}
