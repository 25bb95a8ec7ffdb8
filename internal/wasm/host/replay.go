package host

import (
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
)

// Replay is the deterministic view of the host one instance has (what
// [Isolate] gives it), with its state saved and put back, for an instance
// restored to a park point: the fake wall and monotonic clocks and the
// seeded random source.
type Replay struct {
	wall, mono atomic.Int64
	mu         sync.Mutex
	rng        *rand.ChaCha8
}

// ReplayState is a saved state of a Replay.
type ReplayState struct {
	wall, mono int64
	rng        []byte
}

// NewReplay returns the view every instance starts with.
func NewReplay() *Replay {
	return &Replay{rng: rand.NewChaCha8([32]byte{'s', 'a', 'n', 'd', 'b', 'a', 'n', 'k'})}
}

// Configure returns cfg with the guest's clocks, sleep, yield and random
// source served by p (as Isolate documents them).
func (p *Replay) Configure(cfg wazero.ModuleConfig) wazero.ModuleConfig {
	return cfg.
		WithWalltime(func() (int64, int32) {
			t := FakeEpoch + (p.wall.Add(1)-1)*int64(time.Millisecond)
			return t / 1e9, int32(t % 1e9)
		}, sys.ClockResolution(time.Millisecond)).
		WithNanotime(func() int64 {
			return (p.mono.Add(1) - 1) * int64(time.Millisecond)
		}, sys.ClockResolution(time.Millisecond)).
		WithNanosleep(func(int64) {}).
		WithOsyield(func() {}).
		WithRandSource(replayReader{p})
}

// Save returns p's state.
func (p *Replay) Save() ReplayState {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _ := p.rng.MarshalBinary() // never fails
	return ReplayState{wall: p.wall.Load(), mono: p.mono.Load(), rng: b}
}

// Restore puts back a state Save returned.
func (p *Replay) Restore(s ReplayState) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.rng.UnmarshalBinary(s.rng) // s came from Save
	p.wall.Store(s.wall)
	p.mono.Store(s.mono)
}

type replayReader struct{ p *Replay }

func (r replayReader) Read(b []byte) (int, error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	return r.p.rng.Read(b)
}

// Globals are the mutable globals of an instance of a module rewritten by
// internal/wasm/rewrite's export-globals pass, in the order of their
// export names: every mutable global the module has.
type Globals []api.MutableGlobal

// errNoGlobals: the module was not rewritten with the export-globals pass.
var errNoGlobals = errors.New("host: the module exports no mutable global (not rewritten with the export-globals pass)")

// ExportedGlobals returns the mutable globals of mod; a module that
// exports none was not rewritten, and is an error.
func ExportedGlobals(mod api.Module) (Globals, error) {
	var out Globals
	for k := 0; ; k++ {
		g := mod.ExportedGlobal(wasmrewrite.GlobalExportName(k))
		if g == nil {
			break
		}
		mg, ok := g.(api.MutableGlobal)
		if !ok {
			return nil, errors.New("host: an exported global of the module is not mutable")
		}
		out = append(out, mg)
	}
	if len(out) == 0 {
		return nil, errNoGlobals
	}
	return out, nil
}

// Save returns the values of gs.
func (gs Globals) Save() []uint64 {
	out := make([]uint64, len(gs))
	for i, g := range gs {
		out[i] = g.Get()
	}
	return out
}

// Restore writes back values Save returned.
func (gs Globals) Restore(vals []uint64) {
	for i, g := range gs {
		g.Set(vals[i])
	}
}
