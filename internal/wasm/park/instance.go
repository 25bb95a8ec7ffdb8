package park

import (
	"context"
	"io"
	"runtime"
	"sync"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	wasmhost "github.com/sandbank/sandbank/internal/wasm/host"
	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// A parked instance's life: one goroutine, which instantiates the module
// and calls _start, and never leaves that call (a snapshot is valid only
// inside the call that took it). At the guest's first read of stdin (the
// park point) the instance takes a snapshot of its call stack (wazero's
// experimental Snapshotter) and the engine saves what else a run can
// change (Guest.Save); then it serves the run it booted for, or parks in
// its pool and waits for one. A run restores all of it (Guest.Restore) and
// resumes the guest from the park point. A snapshot is restored once: the
// park-read pass (internal/wasm/rewrite) wraps fd_read in a loop that
// calls it again while it answers ParkRetry, so the restored read answers
// ParkRetry and the guest reads again with the same arguments; that read
// (retake) takes the next run's snapshot, then is served from the run's
// stdin. The guest ends every run with proc_exit: the engine reads what
// the run left (Guest.Exited), the instance parks again when the run
// ended exactly as expected, and ends otherwise, its replacement booting
// before the run's caller learns its result.

// MaxRestores is how many runs a parked instance serves before it is
// replaced: each snapshot's stack is 16 bytes longer than the one it was
// taken from (wazero v1.12.0 clones a stack with 16 bytes to spare), so
// an instance's snapshots would grow without bound. 2,048 runs add 32 KiB
// to a stack of tens of KiB; the replacement's boot is off the request
// path.
const MaxRestores = 2048

// Guest is an engine's parked instance, which embeds its [Core]: J is a
// run on it (a pointer), F what a run left behind. The Core calls these
// on the instance's goroutine (all but Kill, which is the Core's own and
// may be called from any goroutine).
type Guest[J comparable, F any] interface {
	Instance
	// Instantiate instantiates the module with ctx (the instance's life,
	// with its memory allocator).
	Instantiate(ctx context.Context) (api.Module, error)
	// Boot readies mod's call of _start: it checks the module and returns
	// _start and ctx with what the engine's host functions need.
	Boot(ctx context.Context, mod api.Module) (context.Context, api.Function, error)
	// Save keeps, at the park point, what a run can change besides the
	// call stack (linear memory, globals, clocks, the random source); it
	// ends the instance (Exit) when it cannot.
	Save(ctx context.Context, mod api.Module)
	// Restore puts all that back for run j, and readies j; false ends the
	// instance.
	Restore(mod api.Module, j J) bool
	// Stdin is what run j's reads of stdin are served from.
	Stdin(j J) io.Reader
	// Exited reads what run j left behind at its proc_exit with code, and
	// whether, as far as the engine sees, the instance may park again.
	Exited(mod api.Module, j J, code uint32) (F, bool)
	// Ended reads what run j left behind when the instance ended, its call
	// of _start having returned callErr.
	Ended(j J, callErr error) F
	// Fail ends run j, which could not reach the guest, with err.
	Fail(j J, err error)
	// Deliver hands what run j left behind to its caller.
	Deliver(j J, f F)
	// Kill ends the instance with cause (the embedded Core's method).
	Kill(cause error)
}

// Core is the part of a parked instance I (which embeds it) that this
// package drives: its goroutine, its park point and its restores, its
// fd_read and proc_exit ([WASI]). The fields are the engine's to read;
// only the instance's goroutine writes them once it started.
type Core[I Guest[J, F], J comparable, F any] struct {
	self I
	seat Seat

	// Pool is the instance's pool; nil for an instance booted for one run
	// beyond the pools.
	Pool *Pool[I]
	// Ctx is the instance's life: it ends with the backend's, or Kill.
	Ctx  context.Context
	kill context.CancelCauseFunc
	// Mem allocates the instance's linear memory.
	Mem *wasmhost.Allocator
	// Jobs hands a parked instance its next run; Ready is closed at the
	// first park, or when the instance ended; Dead when its goroutine
	// ended.
	Jobs        chan J
	Ready, Dead chan struct{}
	readyOnce   sync.Once
	// Cur is the run being served.
	Cur J
	// Restores counts the runs served; at MaxRestores (MaxRestores unless
	// a test lowers it) the instance ends after its run.
	Restores, MaxRestores int
	// Retaken, nil in production, is called when the instance took the
	// next run's snapshot (for tests).
	Retaken func()

	snap     experimental.Snapshot // the next run's, restored once
	retaking bool                  // restored: the guest's next read takes the next snapshot
}

// Init readies the core of inst, an instance of pool (nil: one run)
// serving j first (zero: a background boot), living at most as long as
// life, with memory from mem.
func (c *Core[I, J, F]) Init(inst I, life context.Context, pool *Pool[I], mem *wasmhost.Allocator, j J) {
	c.self, c.Pool, c.Mem, c.Cur = inst, pool, mem, j
	c.Ctx, c.kill = context.WithCancelCause(life)
	c.Jobs = make(chan J, 1)
	c.Ready, c.Dead = make(chan struct{}), make(chan struct{})
	c.MaxRestores = MaxRestores
}

// Kill ends the instance, with cause.
func (c *Core[I, J, F]) Kill(cause error) { c.kill(cause) }

// Seat implements Instance.
func (c *Core[I, J, F]) Seat() *Seat { return &c.seat }

// Parked reports whether the instance reached its park point.
func (c *Core[I, J, F]) Parked() bool { return c.snap != nil }

// With returns ctx carrying the instance, for its host functions.
func (c *Core[I, J, F]) With(ctx context.Context) context.Context {
	return context.WithValue(ctx, instanceKey{}, c)
}

// coreOf returns the core of the instance ctx carries, or nil.
func coreOf[I Guest[J, F], J comparable, F any](ctx context.Context) *Core[I, J, F] {
	c, _ := ctx.Value(instanceKey{}).(*Core[I, J, F])
	return c
}

// InstanceOf returns the instance ctx carries, or false.
func InstanceOf[I Guest[J, F], J comparable, F any](ctx context.Context) (I, bool) {
	if c := coreOf[I](ctx); c != nil {
		return c.self, true
	}
	var none I
	return none, false
}

// Writer is the guest's stdout or stderr: it goes to the writer pick
// returns of the current run, and nowhere between runs.
func (c *Core[I, J, F]) Writer(pick func(J) io.Writer) io.Writer {
	return writer[I, J, F]{c: c, pick: pick}
}

type writer[I Guest[J, F], J comparable, F any] struct {
	c    *Core[I, J, F]
	pick func(J) io.Writer
}

func (w writer[I, J, F]) Write(p []byte) (int, error) {
	var none J
	if j := w.c.Cur; j != none {
		return w.pick(j).Write(p)
	}
	return len(p), nil
}

// Start adopts an instance that boots for a run into its pool, and starts
// the instance's goroutine; done runs when that goroutine ends.
func (c *Core[I, J, F]) Start(done func()) {
	var none J
	if c.Cur != none && c.Pool != nil {
		c.Pool.Adopt(c.self) // before its goroutine can put it back
	}
	go c.main(done)
}

// Take returns a parked instance of p (nil: none) for a run whose
// context is ctx, waiting for one that boots in the background (it is
// ready sooner than a new one); false when none is idle or booting. When
// ctx ends first, the error is its cause, and the instance taken goes
// back to p, or ends with closed when p has no room.
func Take[I Guest[J, F], J comparable, F any](ctx context.Context, p *Pool[I], closed error) (I, bool, error) {
	var none I
	if p == nil {
		return none, false, nil
	}
	inst, ok := p.Await(ctx)
	if ctx.Err() != nil {
		if ok && !p.Put(inst) {
			inst.Kill(closed)
		}
		return none, false, context.Cause(ctx)
	}
	return inst, ok, nil
}

// Served waits until run j is served (done is closed), and reports
// false when the instance ended first, while parked, before it took the
// run.
func (c *Core[I, J, F]) Served(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-c.Dead:
		select {
		case <-done:
			return true
		default:
			return false
		}
	}
}

// main instantiates the module and calls _start, which returns only when
// the instance ends.
func (c *Core[I, J, F]) main(done func()) {
	defer done()
	defer close(c.Dead)
	defer c.kill(nil)
	defer func() {
		c.readyOnce.Do(func() { close(c.Ready) })
		if c.Pool != nil {
			c.Pool.Ended(c.self, c.Parked())
		}
	}()
	ctx := experimental.WithMemoryAllocator(c.Ctx, c.Mem)
	defer c.Mem.Release() // after the module is closed (deferred below, so run first)
	mod, err := c.self.Instantiate(ctx)
	if err != nil {
		c.fail(err)
		return
	}
	defer mod.Close(context.Background())
	// When the instance ends, its run's result is delivered already: the
	// waiting caller goes first, before the teardown (closing the module,
	// releasing its memory) that would otherwise hold the P the caller
	// was readied on (0.32 → 0.013 ms p50 from delivery to Evaluate's
	// return for a killed QuickJS loop, in one instrumented run).
	defer runtime.Gosched()
	ctx, start, err := c.self.Boot(ctx, mod)
	if err != nil {
		c.fail(err)
		return
	}
	_, callErr := start.Call(c.With(experimental.WithSnapshotter(ctx)))

	var none J
	j := c.Cur
	if j == none {
		return
	}
	c.Cur = none
	f := c.self.Ended(j, callErr)
	if c.Pool != nil && c.Parked() {
		c.Pool.Leaving(c.self) // the replacement boots before the caller's next run
	}
	c.self.Deliver(j, f)
}

// fail ends a run that could not reach the guest.
func (c *Core[I, J, F]) fail(err error) {
	var none J
	if j := c.Cur; j != none {
		c.Cur = none
		c.self.Fail(j, err)
	}
}

// parkPoint takes the snapshot and everything outside it that a run can
// change, then serves the run the instance booted for, or parks in its
// pool and waits for one. It does not return.
func (c *Core[I, J, F]) parkPoint(ctx context.Context, mod api.Module) {
	snap := experimental.GetSnapshotter(ctx).Snapshot()
	c.self.Save(ctx, mod)
	c.snap = snap

	var none J
	j := c.Cur
	if j == none {
		// Warm returns once its instances are in the pool.
		pooled := c.Pool != nil && c.Pool.Put(c.self)
		c.readyOnce.Do(func() { close(c.Ready) })
		if !pooled {
			Exit(ctx, mod, 0)
		}
		if j = c.wait(); j == none {
			Exit(ctx, mod, 0)
		}
	}
	c.readyOnce.Do(func() { close(c.Ready) })
	c.resume(mod, j)
}

// wait waits for a run of an instance in the pool; zero means the
// instance is to end.
func (c *Core[I, J, F]) wait() J {
	select {
	case j := <-c.Jobs:
		return j
	case <-c.Ctx.Done():
		var none J
		return none
	}
}

// resume restores the park point and resumes the guest with run j. It
// does not return: the snapshot's Restore unwinds to the park point,
// where the guest reads again (retake).
func (c *Core[I, J, F]) resume(mod api.Module, j J) {
	c.Mem.ClearRefused()
	c.seat.ClearUnexpected()
	if !c.self.Restore(mod, j) {
		c.Cur = j
		Exit(context.Background(), mod, 1)
	}
	c.Cur = j
	c.Restores++
	c.retaking = true
	c.snap.Restore([]uint64{uint64(wasmrewrite.ParkRetry)})
}

// retake takes the snapshot the next run restores, in the read the guest
// repeats after a restore: the guest stands at its park point again, with
// the memory and globals Restore wrote back, and no code but the
// park-read wrapper's loop has run since.
func (c *Core[I, J, F]) retake(ctx context.Context) {
	c.snap = experimental.GetSnapshotter(ctx).Snapshot()
	c.retaking = false
	if c.Retaken != nil {
		c.Retaken()
	}
}

// fdRead is fd_read of a parked instance. The first read of stdin is the
// park point; the read the guest repeats after a restore takes the next
// run's snapshot; every read is served from the run's stdin.
func fdRead[I Guest[J, F], J comparable, F any](ctx context.Context, mod api.Module, stack []uint64) {
	c := coreOf[I](ctx)
	if c == nil {
		stack[0] = ErrnoBadf
		return
	}
	if int32(stack[0]) != 0 {
		c.seat.MarkUnexpected()
		stack[0] = ErrnoBadf
		return
	}
	if c.snap == nil {
		c.parkPoint(ctx, mod) // does not return
	}
	if c.retaking {
		c.retake(ctx) // the read repeated at the park point, after a restore
	}
	var none J
	j := c.Cur
	if j == none {
		c.seat.MarkUnexpected()
		stack[0] = ErrnoBadf
		return
	}
	stack[0] = ReadInto(mod.Memory(), c.self.Stdin(j), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]))
}

// procExit is proc_exit of a parked instance: it ends the run, and parks
// the instance again when the run ended as expected.
func procExit[I Guest[J, F], J comparable, F any](ctx context.Context, mod api.Module, stack []uint64) {
	code := uint32(stack[0])
	var none J
	c := coreOf[I](ctx)
	if c == nil || c.Cur == none || c.snap == nil {
		Exit(ctx, mod, code)
	}
	j := c.Cur
	f, keep := c.self.Exited(mod, j, code)
	keep = keep && !c.seat.Unexpected() && c.Restores < c.MaxRestores && c.Ctx.Err() == nil
	c.Cur = none
	// Back in the pool before the run's caller learns its result, so that
	// the caller's next run finds the instance parked.
	keep = keep && c.Pool != nil && c.Pool.Put(c.self)
	if !keep && c.Pool != nil {
		c.Pool.Leaving(c.self) // the replacement boots before the caller's next run
	}
	c.self.Deliver(j, f)
	if !keep {
		Exit(ctx, mod, code)
	}
	next := c.wait()
	if next == none {
		Exit(ctx, mod, code)
	}
	c.resume(mod, next)
}
