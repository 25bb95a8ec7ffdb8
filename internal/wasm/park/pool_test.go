package park

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fake is an instance that does nothing: the tests play its goroutine.
type fake struct {
	seat Seat
	id   int
}

func (f *fake) Seat() *Seat { return &f.seat }

// booter starts fakes and remembers the background ones it started.
type booter struct {
	n      int
	closed bool
	booted []*fake
}

func (b *booter) boot(*Pool[*fake]) (*fake, bool) {
	if b.closed {
		return nil, false
	}
	b.n++
	f := &fake{id: b.n}
	b.booted = append(b.booted, f)
	return f, true
}

// TestPoolKeepsWithinItsSize plays random runs against a pool: runs take
// idle instances or boot their own, instances come back or end, and
// background boots park or fail. Whatever the order, the pool never
// keeps more than its size in idle and booting instances, and once every
// run came back and every boot parked, it holds exactly its size.
func TestPoolKeepsWithinItsSize(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		size := 1 + rng.IntN(3)
		b := &booter{}
		p := New(size, b.boot)
		var out, booting []*fake
		check := func(step int, what string) {
			idle, nb, no := p.Counts()
			require.LessOrEqual(t, idle+nb, size, "seed %d step %d: %s", seed, step, what)
			require.Equal(t, len(booting), nb, "seed %d step %d: %s", seed, step, what)
			require.Equal(t, len(out), no, "seed %d step %d: %s", seed, step, what)
		}
		take := func(s []*fake) (*fake, []*fake) {
			i := rng.IntN(len(s))
			f := s[i]
			return f, slices.Delete(s, i, i+1)
		}
		done, cancel := context.WithCancel(context.Background())
		cancel()
		for step := range 60 {
			var what string
			switch op := rng.IntN(6); {
			case op == 0: // a run arrives; it does not wait for a boot (the test plays the boots)
				what = "run"
				if f, ok := p.Await(done); ok {
					out = append(out, f)
				} else if f, ok := b.boot(p); ok {
					p.Adopt(f)
					out = append(out, f)
				}
			case op == 1 && len(out) > 0: // a run ends and its instance parks again
				what = "put"
				var f *fake
				f, out = take(out)
				p.Put(f)
			case op == 2 && len(out) > 0: // a run ends its instance
				what = "leaving"
				var f *fake
				f, out = take(out)
				p.Leaving(f)
				p.Ended(f, true)
			case op == 3: // the pool fills
				what = "refill"
				p.Refill()
			case op == 4 && len(booting) > 0: // a background boot parks
				what = "parked"
				var f *fake
				f, booting = take(booting)
				p.Put(f)
			case op == 5 && len(booting) > 0 && rng.IntN(4) == 0: // a background boot fails
				what = "boot failed"
				var f *fake
				f, booting = take(booting)
				p.Ended(f, false)
			}
			for _, f := range b.booted {
				if f.seat.background && !slices.Contains(booting, f) {
					booting = append(booting, f)
				}
			}
			b.booted = b.booted[:0]
			check(step, what)
		}
		for { // every run comes back, every boot parks, until the pool is full
			for _, f := range append(out, booting...) {
				p.Put(f)
			}
			out = nil
			if booting = p.Refill(); len(booting) == 0 {
				break
			}
		}
		idle, nb, no := p.Counts()
		if !p.broken {
			assert.Equal(t, [3]int{size, 0, 0}, [3]int{idle, nb, no}, "seed %d", seed)
		}
	}
}

// TestAwaitWaitsForABootingInstance: a run that finds an instance booting
// waits for it rather than booting a second one, and gives up with its
// context.
func TestAwaitWaitsForABootingInstance(t *testing.T) {
	b := &booter{}
	p := New(1, b.boot)
	started := p.Refill()
	require.Len(t, started, 1)

	got := make(chan *fake)
	go func() {
		f, _ := p.Await(context.Background())
		got <- f
	}()
	require.True(t, p.Put(started[0]))
	assert.Same(t, started[0], <-got)

	// Out on a run, nothing booting: a second run finds nothing to wait for.
	_, ok := p.Await(context.Background())
	assert.False(t, ok)

	// A booting instance and a cancelled run: Await gives up.
	p.Leaving(started[0])
	p.Ended(started[0], true)
	_, nb, _ := p.Counts()
	require.Equal(t, 1, nb)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, ok = p.Await(ctx)
	assert.False(t, ok)
}

// TestRunsOutCountAgainstTheRefill: while a run holds an instance, the
// pool does not boot a replacement for it; one that will not come back
// is replaced before its run's caller learns the result.
func TestRunsOutCountAgainstTheRefill(t *testing.T) {
	b := &booter{}
	p := New(1, b.boot)
	require.Len(t, p.Refill(), 1)
	require.True(t, p.Put(b.booted[0]))
	f, ok := p.Await(context.Background())
	require.True(t, ok)
	assert.Empty(t, p.Refill(), "the instance out on a run may come back")
	p.Leaving(f)
	_, nb, no := p.Counts()
	assert.Equal(t, [2]int{1, 0}, [2]int{nb, no}, "its replacement boots at once")
	p.Ended(f, true)
	_, nb, _ = p.Counts()
	assert.Equal(t, 1, nb, "and only one")
}

// TestABrokenPoolBootsOnlyForRuns: a background boot that fails does not
// boot another, forever.
func TestABrokenPoolBootsOnlyForRuns(t *testing.T) {
	b := &booter{}
	p := New(2, b.boot)
	started := p.Refill()
	require.Len(t, started, 2)
	p.Ended(started[0], false)
	assert.Len(t, b.booted, 2, "no boot after a failed one")
	require.True(t, p.Put(started[1]))
	f, ok := p.Await(context.Background())
	require.True(t, ok)
	p.Leaving(f)
	p.Ended(f, true)
	assert.Len(t, b.booted, 2)
	b.closed = true
	assert.Empty(t, New(1, b.boot).Refill(), "a closed backend boots nothing")
}
