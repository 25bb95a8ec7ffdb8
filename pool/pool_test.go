package pool

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

// testRegistry registers javascript engines a (default: registered
// first), b and c, and starlark engine s; every factory builds a fake
// and counts its builds in builds.
func testRegistry(builds *atomic.Int32) *registry.Registry {
	reg := registry.New()
	for _, e := range []struct{ name, lang string }{{"js-a", "javascript"}, {"js-c", "javascript"}, {"js-b", "javascript"}, {"star", "starlark"}} {
		caps := fakebackend.Capabilities()
		caps.Language = e.lang
		reg.Register(registry.Entry{Engine: e.name, Language: e.lang, Capabilities: caps, Description: "fake " + e.name,
			Factory: func() (spi.Backend, error) {
				if builds != nil {
					builds.Add(1)
				}
				return fakebackend.New(caps, fakebackend.Echo()), nil
			}})
	}
	return reg
}

func newPool(t *testing.T, reg *registry.Registry, o *Options) *Pool {
	t.Helper()
	p, err := New(reg, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestNewRefusesBadOptions(t *testing.T) {
	_, err := New(nil, nil)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = New(registry.New(), &Options{Effect: effect.Options{MaxAbandoned: -1}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorIs(t, err, effect.ErrInvalidLimits)
	assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))

	// Options that need a capability of the backend are checked when it
	// is built, not refused by New.
	p, err := New(registry.New(), &Options{Effect: effect.Options{Host: effect.HostFuncs{
		"f": func(context.Context, json.RawMessage) (any, error) { return nil, nil }}}})
	require.NoError(t, err)
	require.NoError(t, p.Close())
}

func TestResolve(t *testing.T) {
	p := newPool(t, testRegistry(nil), nil)
	for _, tc := range []struct {
		name             string
		engine, language string
		allowed          []string
		want             string
		notAllowed       bool
		sentinel         error
	}{
		{name: "engine", engine: "js-b", want: "js-b"},
		{name: "engine and its language", engine: "js-b", language: "javascript", want: "js-b"},
		{name: "language: its default", language: "javascript", want: "js-a"},
		{name: "language, restricted: the default when allowed", language: "javascript", allowed: []string{"js-c", "js-a"}, want: "js-a"},
		{name: "language, restricted: the first allowed by name", language: "javascript", allowed: []string{"js-c", "js-b", "star"}, want: "js-b"},
		{name: "engine of another language", engine: "js-b", language: "starlark", sentinel: effect.ErrInvalidCall},
		{name: "engine not allowed", engine: "js-b", allowed: []string{"js-a"}, notAllowed: true},
		{name: "no allowed engine of the language", language: "javascript", allowed: []string{"star"}, notAllowed: true},
		{name: "unknown engine", engine: "nonesuch", sentinel: registry.ErrUnknownEngine},
		{name: "unknown language", language: "cobol", sentinel: registry.ErrUnknownLanguage},
		{name: "neither", sentinel: effect.ErrInvalidCall},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := p.Resolve(tc.engine, tc.language, tc.allowed...)
			if tc.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, e.Engine)
				return
			}
			require.Error(t, err)
			assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
			assert.Equal(t, tc.notAllowed, errors.Is(err, ErrNotAllowed))
			if tc.sentinel != nil {
				assert.ErrorIs(t, err, tc.sentinel)
			}
			assert.True(t, strings.HasPrefix(err.Error(), "pool: ") || strings.HasPrefix(err.Error(), "registry: "), err.Error())
		})
	}
}

// TestResolveQuotesAnExcerpt: what the caller named is bounded in the
// error.
func TestResolveQuotesAnExcerpt(t *testing.T) {
	p := newPool(t, testRegistry(nil), nil)
	huge := strings.Repeat("n", 1<<20)
	for _, q := range [][2]string{{huge, ""}, {"js-a", huge}, {"", huge}} {
		_, err := p.Resolve(q[0], q[1])
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 4096)
	}
	_, err := p.Resolve("", "javascript", strings.Repeat("x", 1<<20), "y", "z", "1", "2", "3", "4", "5", "6", "7")
	require.ErrorIs(t, err, ErrNotAllowed)
	assert.Less(t, len(err.Error()), 4096)
	assert.Contains(t, err.Error(), "and 2 more")
}

// TestEffectIsBuiltOnceAndShared: concurrent first uses build the engine
// once, and every use gets the same effect.
func TestEffectIsBuiltOnceAndShared(t *testing.T) {
	var builds atomic.Int32
	p := newPool(t, testRegistry(&builds), nil)
	assert.Zero(t, builds.Load(), "New builds nothing")
	var wg sync.WaitGroup
	effs := make([]*effect.Effect, 8)
	for i := range effs {
		wg.Go(func() {
			eff, err := p.Effect("js-a")
			assert.NoError(t, err)
			effs[i] = eff
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), builds.Load())
	for _, eff := range effs {
		assert.Same(t, effs[0], eff)
	}
	rec, err := effs[0].Run(context.Background(), effect.Call{Source: []byte("x"), Input: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":1}`, string(rec.Value))
	assert.Equal(t, "js-a", rec.Receipt.Engine, "receipts name the registry's engine")
}

// TestFailedBuildIsRetried: a factory that fails, or panics, is an error
// of that use (infrastructure, not a crash), and the next use builds
// again.
func TestFailedBuildIsRetried(t *testing.T) {
	for name, fail := range map[string]func() (spi.Backend, error){
		"error": func() (spi.Backend, error) { return nil, errors.New("boom") },
		"panic": func() (spi.Backend, error) { panic(strings.Repeat("p", 1<<20)) },
		"nil":   func() (spi.Backend, error) { return nil, nil },
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			reg := registry.New()
			caps := fakebackend.Capabilities()
			reg.Register(registry.Entry{Engine: "flaky", Language: "javascript", Capabilities: caps, Factory: func() (spi.Backend, error) {
				if calls.Add(1) == 1 {
					return fail()
				}
				return fakebackend.New(caps, nil), nil
			}})
			p := newPool(t, reg, nil)
			_, err := p.Effect("flaky")
			require.Error(t, err)
			assert.Equal(t, effect.KindInfrastructure, effect.KindOf(err))
			assert.Less(t, len(err.Error()), 4096)
			eff, err := p.Effect("flaky")
			require.NoError(t, err)
			assert.NotNil(t, eff)
			assert.Equal(t, int32(2), calls.Load())
		})
	}
}

// TestRefusedBackendIsInvalid: a backend the effect options refuse is an
// invalid call, and the backend is closed.
func TestRefusedBackendIsInvalid(t *testing.T) {
	reg := registry.New()
	caps := fakebackend.Capabilities()
	caps.Network = spi.NetworkOpen
	b := fakebackend.New(caps, nil)
	reg.Register(registry.Entry{Engine: "open", Language: "javascript", Capabilities: caps, Factory: func() (spi.Backend, error) { return b, nil }})
	p := newPool(t, reg, nil)
	_, err := p.Effect("open")
	assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
	assert.Equal(t, 1, b.Counts().Closes)
}

// TestClose: Close closes every built effect once; later uses are
// KindClosed.
func TestClose(t *testing.T) {
	var backends []*fakebackend.Backend
	reg := registry.New()
	caps := fakebackend.Capabilities()
	reg.Register(registry.Entry{Engine: "e", Language: "javascript", Capabilities: caps, Factory: func() (spi.Backend, error) {
		b := fakebackend.New(caps, nil)
		backends = append(backends, b)
		return b, nil
	}})
	p, err := New(reg, nil)
	require.NoError(t, err)
	eff, err := p.Effect("e")
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "Close is idempotent")
	require.Len(t, backends, 1)
	assert.Equal(t, 1, backends[0].Counts().Closes)
	_, err = p.Effect("e")
	assert.ErrorIs(t, err, effect.ErrClosed)
	assert.Equal(t, effect.KindClosed, effect.KindOf(err))
	_, err = eff.Evaluate(context.Background(), effect.Call{Source: []byte("x")})
	assert.Equal(t, effect.KindClosed, effect.KindOf(err))
	assert.Equal(t, effect.KindClosed, effect.KindOf(p.Warm(context.Background(), "e")))
	assert.Len(t, backends, 1, "nothing is built after Close")
}

func TestWarm(t *testing.T) {
	var builds atomic.Int32
	p := newPool(t, testRegistry(&builds), nil)
	require.NoError(t, p.Warm(context.Background(), "js-b"))
	assert.Equal(t, int32(1), builds.Load())
	require.NoError(t, p.Warm(context.Background()))
	assert.Equal(t, int32(4), builds.Load(), "no engine named: every engine, each built once")
	err := p.Warm(context.Background(), "nonesuch")
	assert.ErrorIs(t, err, registry.ErrUnknownEngine)
}

func TestFactoryOption(t *testing.T) {
	var used atomic.Bool
	p := newPool(t, testRegistry(nil), &Options{Factory: func(e registry.Entry) spi.Factory {
		if e.Engine != "js-b" {
			return nil
		}
		return func() (spi.Backend, error) { used.Store(true); return e.Factory() }
	}})
	_, err := p.Effect("js-a")
	require.NoError(t, err)
	assert.False(t, used.Load())
	_, err = p.Effect("js-b")
	require.NoError(t, err)
	assert.True(t, used.Load())
}

func TestCeilingAndClamp(t *testing.T) {
	p := newPool(t, testRegistry(nil), &Options{Effect: effect.Options{Limits: spi.Limits{WallClock: 2 * time.Second}}})
	c := p.Ceiling()
	assert.Equal(t, spi.Limits{WallClock: 2 * time.Second, MemoryBytes: effect.DefaultMemoryBytes}, c)

	assert.Equal(t, spi.Limits{WallClock: time.Second, MemoryBytes: effect.DefaultMemoryBytes},
		Lower(c, spi.Limits{WallClock: time.Second, MemoryBytes: effect.DefaultMemoryBytes * 2}),
		"a tenant's ceiling above the pool's leaves the pool's")
	assert.Equal(t, c, Lower(c, spi.Limits{}))

	got, err := Clamp(c, spi.Limits{})
	require.NoError(t, err)
	assert.Equal(t, c, got, "zero fields ask for the ceiling")
	got, err = Clamp(c, spi.Limits{MemoryBytes: 1 << 20})
	require.NoError(t, err)
	assert.Equal(t, spi.Limits{WallClock: 2 * time.Second, MemoryBytes: 1 << 20}, got)

	for _, asked := range []spi.Limits{{WallClock: 3 * time.Second}, {MemoryBytes: c.MemoryBytes + 1}, {WallClock: -1}, {MemoryBytes: -1}} {
		_, err := Clamp(c, asked)
		var le *LimitError
		require.ErrorAs(t, err, &le)
		assert.ErrorIs(t, err, effect.ErrInvalidLimits)
		assert.Equal(t, effect.KindInvalidCall, effect.KindOf(err))
		assert.Equal(t, asked.WallClock < 0 || asked.MemoryBytes < 0, le.Negative())
	}
}

func TestDescribe(t *testing.T) {
	p := newPool(t, testRegistry(nil), nil)
	all := p.Describe()
	require.Len(t, all, 4)
	assert.Equal(t, Description{Engine: "js-a", Language: "javascript", Default: true, Capabilities: fakebackend.Capabilities(), Description: "fake js-a"}, all[0])
	assert.Equal(t, "js-b", all[1].Engine)
	assert.False(t, all[1].Default)
	some := p.Describe("star", "nonesuch")
	require.Len(t, some, 1)
	assert.True(t, some[0].Default)
}

// TestPackageSets: an engine that takes packages is built once per
// distinct set (order and duplicates aside), apart from its own; one that
// takes none serves every set with its own; the sets are bounded at
// MaxPackageSets; every engine built is closed with the pool; a pool
// without Options.Packages refuses packages.
func TestPackageSets(t *testing.T) {
	var backends []*fakebackend.Backend
	var asked [][]string
	reg := testRegistry(nil)
	p, err := New(reg, &Options{Packages: func(e registry.Entry, packages []string) spi.Factory {
		if e.Engine != "star" {
			return nil
		}
		asked = append(asked, packages)
		return func() (spi.Backend, error) {
			b := fakebackend.New(e.Capabilities, fakebackend.Echo())
			backends = append(backends, b)
			return b, nil
		}
	}})
	require.NoError(t, err)

	own, err := p.Effect("star")
	require.NoError(t, err)
	a, err := p.Effect("star", "pandas", "numpy")
	require.NoError(t, err)
	a2, err := p.Effect("star", "numpy", "pandas", "numpy")
	require.NoError(t, err)
	b, err := p.Effect("star", "numpy")
	require.NoError(t, err)
	assert.NotSame(t, own, a, "a package set is an engine of its own")
	assert.Same(t, a, a2, "one engine per distinct set")
	assert.NotSame(t, a, b)
	assert.Equal(t, [][]string{{"numpy", "pandas"}, {"numpy"}}, asked, "the factory gets each set once, sorted")

	js, err := p.Effect("js-a")
	require.NoError(t, err)
	js2, err := p.Effect("js-a", "numpy")
	require.NoError(t, err)
	assert.Same(t, js, js2, "an engine that takes no packages serves every set with its own")

	for i := 3; i <= MaxPackageSets; i++ {
		_, err := p.Effect("star", "p"+strings.Repeat("x", i))
		require.NoError(t, err, "set %d", i)
	}
	_, err = p.Effect("star", "onemore")
	assert.ErrorIs(t, err, effect.ErrInvalidCall, "past MaxPackageSets")
	assert.ErrorContains(t, err, "package sets")
	_, err = p.Effect("js-a", "onemore")
	assert.ErrorIs(t, err, effect.ErrInvalidCall, "a set counts whichever engine asks")
	_, err = p.Effect("star", "numpy")
	assert.NoError(t, err, "a set already built is still served")

	require.NoError(t, p.Close())
	require.Len(t, backends, MaxPackageSets)
	for _, b := range backends {
		assert.Equal(t, 1, b.Counts().Closes, "each set's engine is closed with the pool")
	}

	plain := newPool(t, testRegistry(nil), nil)
	_, err = plain.Effect("star", "numpy")
	assert.ErrorIs(t, err, effect.ErrInvalidCall, "no Options.Packages: packages are refused, not ignored")
}
