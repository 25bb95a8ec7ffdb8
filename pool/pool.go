package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// Options configure a Pool. A nil *Options means defaults.
type Options struct {
	// Effect configures every engine's effect; its Engine is set to each
	// engine's registry name, which receipts record. Its Limits, defaults
	// applied, are the pool's ceiling (see Pool.Ceiling).
	Effect effect.Options
	// Scripts is where every effect reads a call's script by address. Nil
	// means one empty store: calls carry their script as Call.Source.
	Scripts effect.ScriptReader
	// Factory, when not nil, returns the factory an engine's backend is
	// built with (the command line passes one that keeps compiled modules
	// in its cache). Nil, or a nil result, means the entry's own.
	Factory func(registry.Entry) spi.Factory
	// Packages, when not nil, returns the factory of an engine whose
	// scripts may import exactly the named packages (sorted, without
	// duplicates: a caller's allow-list, such as a tenant's), or nil for
	// an engine that takes no packages, whose own effect then serves
	// (see Effect). The command line passes builtin.PackagesFactory.
	// Nil means no engine takes packages: Effect refuses them.
	Packages func(e registry.Entry, packages []string) spi.Factory
}

// MaxPackageSets bounds the distinct package sets a pool builds engines
// with (Effect): each is an engine of its own, such as a python zygote
// with its own preloaded interpreter. A tenants document naming more is
// refused (package tenant).
const MaxPackageSets = 8

// Pool holds one effect per engine of a registry, each built on first use
// and kept until Close. Build it with New; it is safe for concurrent use.
type Pool struct {
	reg     *registry.Registry
	opts    effect.Options
	scripts effect.ScriptReader
	factory func(registry.Entry) spi.Factory
	withPkg func(registry.Entry, []string) spi.Factory

	mu     sync.Mutex
	slots  map[string]*slot // by engine, and package set (key)
	sets   map[string]bool  // the package sets of slots, by key
	closed bool

	closeOnce sync.Once
	closeErr  error
}

// slot is one engine's effect (with a package set, or its own), built
// under mu so that concurrent first uses wait for one build.
type slot struct {
	factory spi.Factory // nil: the engine's own (Options.Factory, or the entry's)

	mu     sync.Mutex
	eff    *effect.Effect
	closed bool
}

// ErrInvalidOptions is matched by every error New returns for options it
// refuses. It matches effect.ErrInvalidCall too.
var ErrInvalidOptions = fmt.Errorf("pool: invalid options: %w", effect.ErrInvalidCall)

// errClosed is every use after Close.
var errClosed = fmt.Errorf("pool: closed: %w", effect.ErrClosed)

// New returns a Pool over the engines of reg. It builds no backend; it
// refuses a nil registry and effect options that effect.New would refuse,
// with an error matching ErrInvalidOptions and the effect's own sentinel.
func New(reg *registry.Registry, opts *Options) (*Pool, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: nil registry", ErrInvalidOptions)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Scripts == nil {
		o.Scripts = new(storage.MemoryStore)
	}
	// The effect checks its options before it looks at the backend; a
	// probe backend lets it do so now, so that no check is copied here.
	probe, err := effect.New(o.Scripts, probeBackend{}, &o.Effect)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	_ = probe.Close()
	return &Pool{reg: reg, opts: o.Effect, scripts: o.Scripts, factory: o.Factory, withPkg: o.Packages,
		slots: map[string]*slot{}, sets: map[string]bool{}}, nil
}

// Registry returns the pool's registry.
func (p *Pool) Registry() *registry.Registry { return p.reg }

// Effect returns the effect of the named engine, building it on first use.
// With packages (a caller's allow-list, such as a tenant's), it is the
// engine built with exactly those packages (Options.Packages), one per
// distinct set, at most MaxPackageSets sets; an engine that takes no
// packages ignores them. Without, it is the engine's own.
//
// An unknown engine is an invalid call (see Resolve), and so are
// packages a pool without Options.Packages cannot honour and a package
// set past MaxPackageSets; a use after Close matches effect.ErrClosed; a
// build that failed (the factory erred, panicked or returned no backend,
// or the effect refused the backend) is returned, and the next use tries
// again.
func (p *Pool) Effect(engine string, packages ...string) (*effect.Effect, error) {
	e, err := p.reg.Lookup(engine)
	if err != nil {
		return nil, invalidLookup(err)
	}
	s, err := p.slot(e, packages)
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, errClosed
	case s.eff != nil:
		return s.eff, nil
	}
	eff, err := p.build(e, s.factory)
	if err != nil {
		return nil, err
	}
	s.eff = eff
	return eff, nil
}

// slot returns the slot of e with packages, made on first use: its own
// slot for an engine that takes no packages.
func (p *Pool) slot(e registry.Entry, packages []string) (*slot, error) {
	key, set := e.Engine, ""
	var sorted []string
	if len(packages) > 0 {
		if p.withPkg == nil {
			return nil, invalidf(effect.ErrInvalidCall, "pool: packages were asked for, and this pool builds no engine with packages")
		}
		sorted = slices.Compact(slices.Sorted(slices.Values(packages)))
		set = strings.Join(sorted, "\x00")
		key += "\x00" + set
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, errClosed
	case p.slots[key] != nil:
		return p.slots[key], nil
	}
	if set != "" && !p.sets[set] {
		if len(p.sets) == MaxPackageSets {
			return nil, invalidf(effect.ErrInvalidCall, "pool: more than %d package sets: each is an engine of its own", MaxPackageSets)
		}
		p.sets[set] = true
	}
	s := &slot{}
	if set != "" {
		s.factory = p.withPkg(e, sorted)
	}
	if set != "" && s.factory == nil { // an engine that takes no packages
		if s = p.slots[e.Engine]; s == nil {
			s = &slot{}
			p.slots[e.Engine] = s
		}
	}
	p.slots[key] = s
	return s, nil
}

// build makes the effect of e, with f when not nil (a package set's).
func (p *Pool) build(e registry.Entry, f spi.Factory) (*effect.Effect, error) {
	if f == nil {
		f = e.Factory
		if p.factory != nil {
			if g := p.factory(e); g != nil {
				f = g
			}
		}
	}
	b, err := construct(f)
	if err != nil {
		return nil, fmt.Errorf("pool: building engine %s: %w", e.Engine, err)
	}
	opts := p.opts
	opts.Engine = e.Engine
	eff, err := effect.New(p.scripts, b, &opts)
	if err != nil {
		if c, ok := b.(io.Closer); ok {
			_ = c.Close()
		}
		return nil, fmt.Errorf("pool: engine %s: %w", e.Engine, err)
	}
	return eff, nil
}

// errNoBackend is a factory that returned neither a backend nor an error.
var errNoBackend = errors.New("the engine's factory returned no backend")

// construct calls f, recovering a panic into an error: a broken factory
// is the engine's failure, not the process's.
func construct(f spi.Factory) (b spi.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("the engine's factory panicked: %s", effect.Excerpt(fmt.Sprint(r)))
		}
	}()
	b, err = f()
	if err == nil && b == nil {
		err = errNoBackend
	}
	return b, err
}

// Warm builds the named engines (every registered engine when none is
// named) and warms each (effect.Effect.Warm: the backends that implement
// Warm compile or start ahead of their first run). It returns every
// engine's error, joined; an engine that failed is built again on its
// next use.
func (p *Pool) Warm(ctx context.Context, engines ...string) error {
	if len(engines) == 0 {
		for _, e := range p.reg.Engines() {
			engines = append(engines, e.Engine)
		}
	}
	var errs []error
	for _, name := range engines {
		eff, err := p.Effect(name)
		if err == nil {
			err = eff.Warm(ctx)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("pool: warming engine %s: %w", effect.Excerpt(name), err))
		}
	}
	return errors.Join(errs...)
}

// Close closes every effect the pool built, waiting for a build in
// progress, and returns their errors joined. Later uses fail with an error
// matching effect.ErrClosed; Close is idempotent.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		slots := p.slots
		p.slots = nil
		p.mu.Unlock()
		var errs []error
		for name, s := range slots {
			s.mu.Lock()
			s.closed = true
			if s.eff != nil {
				if err := s.eff.Close(); err != nil {
					engine, _, _ := strings.Cut(name, "\x00") // a package set's slot
					errs = append(errs, fmt.Errorf("pool: closing engine %s: %w", engine, err))
				}
				s.eff = nil
			}
			s.mu.Unlock()
		}
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// probeBackend lets New check the effect options; it never runs. It
// declares every capability an option may need (host calls, logs) and
// none the effect refuses by default.
type probeBackend struct{}

func (probeBackend) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "probe", Network: spi.NetworkNone, WallClock: spi.WallClockHard, FreshPerRun: true, HostCalls: true, Logs: true}
}

func (probeBackend) Evaluate(context.Context, spi.Request) (spi.Outcome, error) {
	return spi.Outcome{}, errors.New("pool: the probe backend does not run scripts")
}
