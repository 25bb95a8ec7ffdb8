package quickjs

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/sys"
)

// What makes a run deterministic: a fake clock and a seeded random
// source, fresh for every run (parked mode resets both to the park point).

// fakeEpoch is what the script's clock reads at its first reading:
// 2000-01-01T00:00:00Z, far from any host time.
const fakeEpoch = int64(946684800) * int64(time.Second)

// fakeClock is the fake wall and monotonic clock of one instance; both
// advance one millisecond per reading, from fakeEpoch and from zero.
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

// newReplayRand returns the random source every instance starts with.
func newReplayRand() *replayRand {
	return &replayRand{c: rand.NewChaCha8([32]byte{'s', 'a', 'n', 'd', 'b', 'a', 'n', 'k'})}
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

// moduleConfig is the module configuration of an instance in either
// mode, without its standard streams: anonymous (any number side by
// side), _start called by the host after the canary is set, the fake
// clock, no sleeping or yielding, the seeded random source.
func (b *Backend) moduleConfig(memoryBytes int64, clock *fakeClock, rng *replayRand) wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithArgs(b.argsFor(memoryBytes)...).
		WithStartFunctions().
		WithWalltime(clock.walltime, sys.ClockResolution(time.Millisecond)).
		WithNanotime(clock.nanotime, sys.ClockResolution(time.Millisecond)).
		WithNanosleep(func(int64) {}).
		WithOsyield(func() {}).
		WithRandSource(rng)
}
