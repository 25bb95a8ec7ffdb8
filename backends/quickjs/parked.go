package quickjs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sandbank/sandbank/backends/quickjs/internal/guest"
	"github.com/sandbank/sandbank/spi"
)

// Parked mode.
//
// An instance is instantiated and its _start called on a goroutine of its
// own, which it never leaves: a snapshot is only valid inside the call that
// took it. The guest boots the engine and evaluates the wrapper, which
// reads its request from stdin; at that first read (the park point) the
// host takes a snapshot of everything the run could change: the native
// call stack (wazero's Snapshotter), all of linear memory, every mutable
// global, the function tables, the fake clocks and the random source, and
// the arguments of that read. Then it parks, waiting for a run.
//
// A run restores all of it, writes a fresh stack canary, serves the read
// from the run's own payload and resumes the guest from the park point.
// The wrapper ends every run with proc_exit, whose host function does not
// unwind: it reads the run's facts, hands them to the waiting Evaluate,
// and, when the run ended exactly as expected, parks again. Anything else
// (a trap, a kill, a clobbered canary, memory that grew or was refused,
// a changed table, a WASI call outside the expected set, an exit code or
// record that is not a result or a thrown value) ends the instance; a
// replacement is booted off the request path.

// maxPools bounds how many memory limits keep a pool of their own; a
// run with any other limit boots a one-shot instance.
const maxPools = 4

// WASI errno values (wasi_snapshot_preview1).
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoIO      = 29
	errnoNosys   = 52
)

// expectedWASI are the WASI functions a run may call besides fd_read and
// proc_exit, served by wazero's own implementation: none of them changes
// state that a restore does not reset (fd_write goes to the run's own
// buffers, the clocks and the random source are reset on restore).
var expectedWASI = map[string]bool{
	"args_get": true, "args_sizes_get": true, "environ_get": true, "environ_sizes_get": true,
	"clock_res_get": true, "clock_time_get": true, "random_get": true, "sched_yield": true,
	"fd_fdstat_get": true, "fd_prestat_get": true, "fd_prestat_dir_name": true, "fd_write": true,
}

// instantiateParkedWASI instantiates the host module wasi_snapshot_preview1
// of parked mode: wazero's own WASI functions, with fd_read and proc_exit
// replaced by the parking ones, and every other function the module
// imports replaced by one that answers ENOSYS and marks the run
// unexpected (so its instance is discarded).
func instantiateParkedWASI(ctx context.Context, rt wazero.Runtime, compiled wazero.CompiledModule) error {
	hb := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(hb)
	i32 := api.ValueTypeI32
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(parkedFdRead), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}).
		Export("fd_read")
	hb.NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(parkedProcExit), []api.ValueType{i32}, nil).
		Export("proc_exit")
	for _, f := range compiled.ImportedFunctions() {
		module, name, _ := f.Import()
		if module != wasi_snapshot_preview1.ModuleName || expectedWASI[name] || name == "fd_read" || name == "proc_exit" {
			continue
		}
		results := f.ResultTypes()
		hb.NewFunctionBuilder().
			WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
				if inst := instanceOf(ctx); inst != nil {
					inst.unexpected.Store(true)
				}
				if len(results) > 0 {
					stack[0] = errnoNosys
				}
			}), f.ParamTypes(), results).
			Export(name)
	}
	_, err := hb.Instantiate(ctx)
	return err
}

type instanceKey struct{}

func instanceOf(ctx context.Context) *instance {
	inst, _ := ctx.Value(instanceKey{}).(*instance)
	return inst
}

// pool keeps up to size parked instances for one memory limit.
type pool struct {
	b           *Backend
	memoryBytes int64
	size        int

	mu      sync.Mutex
	idle    []*instance
	booting int
	broken  bool          // a background boot failed: boot only on request
	changed chan struct{} // closed (and replaced) when idle or booting changes
}

// notify wakes the runs waiting for an instance; p.mu is held.
func (p *pool) notify() {
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// await returns a parked instance, waiting for one that is booting in
// the background (it is ready sooner than a new one, and costs the host
// no second boot); nil when none is idle or booting, or ctx is done.
func (p *pool) await(ctx context.Context) *instance {
	for {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			inst := p.idle[n-1]
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return inst
		}
		if p.booting == 0 {
			p.mu.Unlock()
			return nil
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		p.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// poolFor returns the pool of a memory limit, or nil when too many limits
// have a pool already.
func (b *Backend) poolFor(memoryBytes int64) *pool {
	b.poolsMu.Lock()
	defer b.poolsMu.Unlock()
	if p, ok := b.pools[memoryBytes]; ok {
		return p
	}
	if len(b.pools) >= maxPools {
		return nil
	}
	p := &pool{b: b, memoryBytes: memoryBytes, size: b.set.poolSize}
	b.pools[memoryBytes] = p
	return p
}

// take returns a parked instance, or nil when none is idle.
func (p *pool) take() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	inst := p.idle[n-1]
	p.idle = p.idle[:n-1]
	return inst
}

// put adds a parked instance to the idle ones, or reports false when the
// pool is full.
func (p *pool) put(inst *instance) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inst.background {
		inst.background = false
		p.booting--
		p.notify()
	}
	if len(p.idle) >= p.size {
		return false
	}
	p.idle = append(p.idle, inst)
	p.notify()
	return true
}

// ended is called when an instance of the pool ended: it boots
// replacements until the pool is full again.
func (p *pool) ended(inst *instance, parked bool) {
	p.mu.Lock()
	if inst.background {
		inst.background = false
		p.booting--
		if !parked {
			p.broken = true
		}
		p.notify()
	}
	p.mu.Unlock()
	if !inst.replaced {
		p.refill()
	}
}

// refill boots instances in the background until idle and booting ones
// fill the pool, and returns them.
func (p *pool) refill() []*instance {
	compiled := p.b.mod
	var started []*instance
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.broken && len(p.idle)+p.booting < p.size {
		inst := p.b.startInstance(p, p.memoryBytes, nil, compiled)
		if inst == nil {
			break // closed
		}
		p.booting++
		started = append(started, inst)
	}
	return started
}

// settled reports whether the pool has no instance booting and holds
// every live instance of the backend idle (for tests).
func (b *Backend) settled() bool {
	b.poolsMu.Lock()
	defer b.poolsMu.Unlock()
	idle := 0
	for _, p := range b.pools {
		p.mu.Lock()
		idle += len(p.idle)
		booting := p.booting
		p.mu.Unlock()
		if booting > 0 {
			return false
		}
	}
	return int64(idle) == b.live.Load()
}

// warm fills the pool and waits until every instance it booted parked
// (or failed), or ctx is done.
func (p *pool) warm(ctx context.Context) error {
	for _, inst := range p.refill() {
		select {
		case <-inst.ready:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// fakeClock is the fake wall and monotonic clock of one instance; both
// advance one millisecond per reading, and parked mode resets their
// counters to the park point's before every run.
type fakeClock struct{ wall, mono atomic.Int64 }

func (c *fakeClock) walltime() (int64, int32) {
	t := fakeEpoch + (c.wall.Add(1)-1)*int64(time.Millisecond)
	return t / 1e9, int32(t % 1e9)
}

func (c *fakeClock) nanotime() int64 { return (c.mono.Add(1) - 1) * int64(time.Millisecond) }

// replayRand is a deterministic random source whose state can be saved
// and restored.
type replayRand struct {
	mu sync.Mutex
	c  *rand.ChaCha8
}

func (r *replayRand) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c.Read(p)
}

func (r *replayRand) state() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := r.c.MarshalBinary() // never fails
	return b
}

func (r *replayRand) restore(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_ = r.c.UnmarshalBinary(b) // b came from state
}

// job is one run in parked mode.
type job struct {
	r       *run
	payload []byte
	canary  *guest.Canary
	stdout  *guest.Stdout
	stderr  *cappedBuffer

	inputRead atomic.Bool

	mu       sync.Mutex
	inst     *instance
	stopped  bool
	finished bool

	done      chan struct{} // closed when facts (or err) are set
	delivered bool          // touched only by the instance goroutine
	facts     guest.Facts
	err       error
}

// attach binds j to the instance that runs it; a job stopped before
// that kills the instance at once.
func (j *job) attach(inst *instance, cause func() error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.inst = inst
	if j.stopped {
		inst.kill(cause())
	}
}

// stop kills the job's instance, unless the run already finished.
func (j *job) stop(cause error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.finished || j.stopped {
		return
	}
	j.stopped = true
	if j.inst != nil {
		j.inst.kill(cause)
	}
}

// finish marks the run finished and reports whether it had been stopped.
func (j *job) finish() (stopped bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.finished = true
	return j.stopped
}

// instance is one parked QuickJS instance, owned by its goroutine.
type instance struct {
	b           *Backend
	pool        *pool // nil for a one-shot instance
	memoryBytes int64
	background  bool // booted by refill, not yet parked (guarded by pool.mu)
	replaced    bool // its pool booted its replacement already (instance goroutine only)

	ctx   context.Context
	kill  context.CancelCauseFunc
	jobs  chan *job
	ready chan struct{} // closed at the first park, or when the instance ended
	dead  chan struct{} // closed when the goroutine ended

	mem       *limitedAllocator
	clock     *fakeClock
	rng       *replayRand
	mod       api.Module
	internals *moduleInternals

	// The park point.
	snap      experimental.Snapshot
	stack     []byte // the snapshot's stack (live after a restore)
	pristine  []byte // its contents at the park point
	memory    []byte // linear memory at the park point
	globals   []uint64
	tables    [][]uintptr
	readArgs  [4]uint64
	wall      int64
	mono      int64
	rngState  []byte
	parked    bool
	readyOnce sync.Once

	// The current run (only the instance goroutine touches these).
	cur        *job
	stdin      *bytes.Reader
	unexpected atomic.Bool
}

// startInstance starts an instance on a goroutine of its own, running j
// (nil for a background boot), or returns nil after Close.
func (b *Backend) startInstance(p *pool, memoryBytes int64, j *job, compiled wazero.CompiledModule) *instance {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.instances.Add(1)
	b.mu.Unlock()
	b.boots.Add(1)
	b.live.Add(1)
	ctx, kill := context.WithCancelCause(b.life)
	inst := &instance{
		b:           b,
		pool:        p,
		memoryBytes: memoryBytes,
		background:  j == nil,
		ctx:         ctx,
		kill:        kill,
		jobs:        make(chan *job, 1),
		ready:       make(chan struct{}),
		dead:        make(chan struct{}),
		mem:         &limitedAllocator{limit: uint64(memoryBytes)},
		clock:       &fakeClock{},
		rng:         &replayRand{c: rand.NewChaCha8([32]byte{'s', 'a', 'n', 'd', 'b', 'a', 'n', 'k'})},
		cur:         j,
	}
	if j != nil && b.onRun != nil {
		b.onRun(inst)
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
		if w.inst.b.beforeWrite != nil {
			w.inst.b.beforeWrite(p, j.r.expireWallClock)
		}
		return j.stdout.Write(p)
	default:
		return j.stderr.Write(p)
	}
	return len(p), nil
}

// main instantiates the module and calls _start, which returns only when
// the instance ends.
func (inst *instance) main(compiled wazero.CompiledModule) {
	b := inst.b
	defer b.instances.Done()
	defer b.live.Add(-1)
	defer close(inst.dead)
	defer inst.kill(nil)
	if j := inst.cur; j != nil {
		j.attach(inst, func() error { return ErrClosed })
	}
	parked := false
	defer func() {
		inst.readyOnce.Do(func() { close(inst.ready) })
		if inst.pool != nil {
			inst.pool.ended(inst, parked)
		}
	}()

	cfg := wazero.NewModuleConfig().
		WithName("").
		WithArgs(b.argsFor(inst.memoryBytes)...).
		WithStdout(writer{inst: inst, stdout: true}).
		WithStderr(writer{inst: inst}).
		WithStartFunctions().
		WithWalltime(inst.clock.walltime, sys.ClockResolution(time.Millisecond)).
		WithNanotime(inst.clock.nanotime, sys.ClockResolution(time.Millisecond)).
		WithNanosleep(func(int64) {}).
		WithOsyield(func() {}).
		WithRandSource(inst.rng)
	ctx := experimental.WithMemoryAllocator(inst.ctx, inst.mem)
	defer inst.mem.release() // after the module is closed (deferred below, so run first)
	mod, err := b.rt.InstantiateModule(ctx, compiled, cfg)
	if err != nil {
		inst.fail(fmt.Errorf("quickjs: instantiate: %w", err))
		return
	}
	defer mod.Close(context.Background())
	inst.mod = mod
	if inst.internals, err = inspectModule(mod); err != nil {
		inst.fail(err)
		return
	}
	memory := mod.Memory()
	start := mod.ExportedFunction("_start")
	if memory == nil || start == nil {
		inst.fail(errors.New("quickjs: the module lacks its memory or _start export"))
		return
	}
	canary := inst.bootCanary()
	if canary == nil || !memory.Write(b.layout.Bottom, canary[:]) {
		inst.fail(errors.New("quickjs: the stack canary lies outside linear memory"))
		return
	}
	if j := inst.cur; j != nil {
		j.r.setPhase(phaseBoot)
	}
	ctx = context.WithValue(experimental.WithSnapshotter(ctx), instanceKey{}, inst)
	_, callErr := start.Call(ctx)
	parked = inst.parked

	j := inst.cur
	if j == nil {
		return
	}
	inst.cur = nil
	j.finish()
	f := inst.facts(j, memory)
	var exit *sys.ExitError
	switch {
	case callErr == nil:
		f.Ending = guest.EndExit
	case errors.As(callErr, &exit):
		f.Ending, f.ExitCode = guest.EndExit, exit.ExitCode()
		if (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) && inst.ctx.Err() != nil {
			f.Ending = guest.EndKilled
		}
	default:
		f.Ending, f.Trap = guest.EndTrap, callErr.Error()
		f.StackExhausted = nativeStackOverflow(callErr)
	}
	if inst.pool != nil && parked {
		inst.pool.refill() // the replacement is booting before the caller's next run
		inst.replaced = true
	}
	inst.deliver(j, f)
}

// bootCanary is the canary that guards the boot: the run's own when the
// instance boots for a run, a random one otherwise.
func (inst *instance) bootCanary() *guest.Canary {
	if j := inst.cur; j != nil {
		return j.canary
	}
	c, err := guest.NewCanary()
	if err != nil {
		return nil
	}
	return c
}

// fail ends a run that could not reach the guest.
func (inst *instance) fail(err error) {
	if j := inst.cur; j != nil {
		inst.cur = nil
		j.finish()
		j.err = err
		j.delivered = true
		close(j.done)
	}
}

// facts reads what the run of j left behind.
func (inst *instance) facts(j *job, memory api.Memory) guest.Facts {
	back, ok := memory.Read(inst.b.layout.Bottom, guest.CanarySize)
	return guest.Facts{
		Record:        j.stdout.Record(),
		InputRead:     j.inputRead.Load(),
		Started:       j.stdout.Started(),
		CanaryIntact:  ok && j.canary.Intact(back),
		MemoryRefused: inst.mem.refused.Load(),
	}
}

func (inst *instance) deliver(j *job, f guest.Facts) {
	if j.delivered {
		return
	}
	j.delivered = true
	j.facts = f
	close(j.done)
}

// exit ends the instance from inside a host function, as proc_exit does.
func exit(ctx context.Context, mod api.Module, code uint32) {
	_ = mod.CloseWithExitCode(ctx, code)
	panic(sys.NewExitError(code))
}

// parkedFdRead is fd_read in parked mode. The first read of stdin is the
// park point; every other read of stdin is served from the run's payload.
func parkedFdRead(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceOf(ctx)
	if inst == nil {
		stack[0] = errnoBadf
		return
	}
	if int32(stack[0]) != 0 {
		inst.unexpected.Store(true)
		stack[0] = errnoBadf
		return
	}
	if inst.snap == nil {
		inst.parkPoint(ctx, mod, stack) // does not return
	}
	if inst.stdin == nil {
		stack[0] = errnoBadf
		return
	}
	stack[0] = inst.readStdin(mod.Memory(), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
}

// parkPoint takes the snapshot, parks, and resumes with a run.
func (inst *instance) parkPoint(ctx context.Context, mod api.Module, stack []uint64) {
	snap := experimental.GetSnapshotter(ctx).Snapshot()
	stk, err := snapshotStack(snap)
	if err != nil {
		inst.fail(err)
		exit(ctx, mod, 1)
	}
	memory := mod.Memory()
	buf, ok := memory.Read(0, memory.Size())
	if !ok {
		exit(ctx, mod, 1)
	}
	if j := inst.cur; j != nil {
		back, ok := memory.Read(inst.b.layout.Bottom, guest.CanarySize)
		if !ok || !j.canary.Intact(back) {
			exit(ctx, mod, 1) // the boot clobbered the stack guard: no snapshot of that
		}
	}
	inst.snap, inst.stack, inst.pristine = snap, stk, slices.Clone(stk)
	inst.memory = slices.Clone(buf)
	inst.globals = inst.internals.globals()
	inst.tables = inst.internals.tableContents()
	copy(inst.readArgs[:], stack[:4])
	inst.wall, inst.mono = inst.clock.wall.Load(), inst.clock.mono.Load()
	inst.rngState = inst.rng.state()
	inst.parked = true

	j := inst.cur
	if j == nil {
		// Warm returns once its instances are in the pool.
		pooled := inst.pool != nil && inst.pool.put(inst)
		inst.readyOnce.Do(func() { close(inst.ready) })
		if !pooled {
			exit(ctx, mod, 0)
		}
		if j = inst.wait(); j == nil {
			exit(ctx, mod, 0)
		}
	}
	inst.readyOnce.Do(func() { close(inst.ready) })
	inst.resume(mod, j)
}

// wait waits for a run of an instance in the pool; nil means the instance
// is to end.
func (inst *instance) wait() *job {
	select {
	case j := <-inst.jobs:
		return j
	case <-inst.ctx.Done():
		return nil
	}
}

// resume restores the park point and resumes the guest with run j. It
// does not return: the snapshot's Restore unwinds to the park point.
func (inst *instance) resume(mod api.Module, j *job) {
	memory := mod.Memory()
	buf, ok := memory.Read(0, uint32(len(inst.memory)))
	if !ok || memory.Size() != uint32(len(inst.memory)) {
		inst.cur = j
		exit(context.Background(), mod, 1)
	}
	copy(buf, inst.memory)
	inst.internals.setGlobals(inst.globals)
	inst.clock.wall.Store(inst.wall)
	inst.clock.mono.Store(inst.mono)
	inst.rng.restore(inst.rngState)
	inst.mem.refused.Store(false)
	inst.unexpected.Store(false)
	if inst.b.restored != nil {
		inst.b.restored(inst)
	}
	memory.Write(inst.b.layout.Bottom, j.canary[:]) // inside memory: checked at boot

	inst.cur = j
	inst.stdin = bytes.NewReader(j.payload)
	j.inputRead.Store(true)
	j.r.setPhase(phaseInput)
	errno := inst.readStdin(memory, uint32(inst.readArgs[1]), uint32(inst.readArgs[2]), uint32(inst.readArgs[3]))
	copy(inst.stack, inst.pristine)
	inst.snap.Restore([]uint64{errno})
}

// readStdin serves a read of stdin from the run's payload, as wazero's
// fd_read serves one from an io.Reader.
func (inst *instance) readStdin(memory api.Memory, iovs, count, resultNread uint32) uint64 {
	iovsBuf, ok := memory.Read(iovs, count<<3)
	if !ok {
		return errnoFault
	}
	var nread uint32
	for pos := uint32(0); pos < count<<3; pos += 8 {
		off := binary.LittleEndian.Uint32(iovsBuf[pos:])
		l := binary.LittleEndian.Uint32(iovsBuf[pos+4:])
		if l == 0 {
			continue
		}
		b, ok := memory.Read(off, l)
		if !ok {
			return errnoFault
		}
		n, err := inst.stdin.Read(b)
		nread += uint32(n)
		if err != nil && err != io.EOF {
			return errnoIO
		}
		if n < int(l) {
			break
		}
	}
	if !memory.WriteUint32Le(resultNread, nread) {
		return errnoFault
	}
	return errnoSuccess
}

// parkedProcExit is proc_exit in parked mode: it ends the run, and parks
// the instance again when the run ended as expected.
func parkedProcExit(ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	inst := instanceOf(ctx)
	if inst == nil || inst.cur == nil || inst.snap == nil {
		exit(ctx, mod, code)
	}
	j := inst.cur
	memory := mod.Memory()
	f := inst.facts(j, memory)
	f.Ending, f.ExitCode = guest.EndExit, code
	keep := code == 0 && f.CanaryIntact && !f.MemoryRefused && f.Started && f.Record.Settled() &&
		memory.Size() == uint32(len(inst.memory)) &&
		inst.internals.tablesEqual(inst.tables) &&
		!inst.unexpected.Load() && !j.r.wallExpired.Load() && inst.ctx.Err() == nil
	if j.finish() {
		keep = false
	}
	inst.cur = nil
	inst.stdin = nil
	// Back in the pool before the run's caller learns its result, so that
	// a caller's next run finds this instance parked.
	keep = keep && inst.pool != nil && inst.pool.put(inst)
	if !keep && inst.pool != nil {
		inst.pool.refill() // the replacement is booting before the caller's next run
		inst.replaced = true
	}
	inst.deliver(j, f)
	if !keep {
		exit(ctx, mod, code)
	}
	next := inst.wait()
	if next == nil {
		exit(ctx, mod, code)
	}
	inst.resume(mod, next)
}

// doParked is Evaluate in parked mode.
func (r *run) doParked(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	b := r.b
	runCtx, end := r.start(ctx)
	defer end()

	compiled, err := b.compiledModule(runCtx)
	if err != nil {
		return r.failure(ctx, runCtx, err)
	}
	r.armColdStart(len(req.Input))
	nonce, err := guest.NewNonce()
	if err != nil {
		return spi.Outcome{}, err
	}
	canary, err := guest.NewCanary()
	if err != nil {
		return spi.Outcome{}, err
	}
	j := &job{
		r:       r,
		payload: guest.Payload(nonce, req.Script, req.Input),
		canary:  canary,
		stdout:  guest.NewStdout(nonce, stdoutLimit(r.limits.MemoryBytes), r.scriptStarts),
		stderr:  &cappedBuffer{limit: b.set.maxStderrBytes},
		done:    make(chan struct{}),
	}
	r.stdout = j.stdout
	stopJob := context.AfterFunc(runCtx, func() { j.stop(context.Cause(runCtx)) })
	defer stopJob()

	p := b.poolFor(r.limits.MemoryBytes)
	var inst *instance
	if p != nil {
		r.setPhase(phaseInstantiate) // waiting for an instance that boots
		inst = p.await(runCtx)
		if runCtx.Err() != nil {
			if inst != nil && !p.put(inst) {
				inst.kill(ErrClosed)
			}
			return r.failure(ctx, runCtx, context.Cause(runCtx))
		}
	}
	if inst != nil {
		b.reuses.Add(1)
		if b.onRun != nil {
			b.onRun(inst)
		}
		j.attach(inst, func() error { return context.Cause(runCtx) })
		inst.jobs <- j
	} else {
		r.setPhase(phaseInstantiate)
		if inst = b.startInstance(p, r.limits.MemoryBytes, j, compiled); inst == nil {
			return spi.Outcome{}, ErrClosed
		}
	}
	select {
	case <-j.done:
	case <-inst.dead:
		select {
		case <-j.done:
		default: // the instance ended while parked, before it took the run
			return r.failure(ctx, runCtx, ErrClosed)
		}
	}
	phase := r.getPhase()
	r.stopTimers()
	if j.err != nil {
		return r.failure(ctx, runCtx, j.err)
	}
	f := j.facts
	f.WallClockExpired = r.wallExpired.Load()
	f.Late = j.stdout.Took() > r.limits.WallClock
	return r.conclude(ctx, runCtx, f, phase, j.stderr)
}
