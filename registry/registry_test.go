package registry_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
)

var errFake = errors.New("fake backend: not constructible")

func fakeFactory() (spi.Backend, error) { return nil, errFake }

// strong is a capability set that meets every requirement.
func strong(lang string) spi.Capabilities {
	return spi.Capabilities{Language: lang, Network: spi.NetworkNone, WallClock: spi.WallClockHard,
		Memory: true, CPU: true, FreshPerRun: true}
}

func entry(engine string, caps spi.Capabilities) registry.Entry {
	return registry.Entry{Engine: engine, Language: caps.Language, Capabilities: caps, Factory: fakeFactory}
}

// panicText runs f and returns its panic value as text; it fails the test
// when f does not panic.
func panicText(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		require.NotNil(t, r, "expected a panic")
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

func TestRegisterPanics(t *testing.T) {
	valid := entry("quickjs", strong("javascript"))
	badNetwork := valid
	badNetwork.Capabilities.Network = 0
	badClock := valid
	badClock.Capabilities.WallClock = 9
	noCapsLanguage := valid
	noCapsLanguage.Capabilities.Language = ""
	otherLanguage := valid
	otherLanguage.Language = "starlark"
	noFactory := valid
	noFactory.Factory = nil
	noEngine := valid
	noEngine.Engine = ""
	noLanguage := valid
	noLanguage.Language = ""

	tests := []struct {
		name  string
		entry registry.Entry
		want  string
	}{
		{"empty engine", noEngine, "registry: Register called with an empty engine name"},
		{"empty language", noLanguage, `registry: Register called with an empty language for engine "quickjs"`},
		{"nil factory", noFactory, `registry: Register factory is nil for engine "quickjs"`},
		{"zero network", badNetwork, "invalid network value 0"},
		{"unknown wall clock", badClock, "invalid wall clock value 9"},
		{"capabilities without language", noCapsLanguage, "empty language"},
		{"language differs from capabilities", otherLanguage,
			`registry: Register called for engine "quickjs" with language "starlark" but capabilities for "javascript"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r registry.Registry
			msg := panicText(t, func() { r.Register(tt.entry) })
			assert.Contains(t, msg, tt.want)
			assert.Empty(t, r.Engines(), "a refused entry must not be registered")
		})
	}
}

func TestRegisterDuplicatePanicsAndKeepsTheFirst(t *testing.T) {
	var r registry.Registry
	first := entry("quickjs", strong("javascript"))
	first.Description = "first"
	r.Register(first)

	second := entry("quickjs", strong("javascript"))
	second.Description = "second"
	msg := panicText(t, func() { r.Register(second) })
	assert.Equal(t, `registry: Register called twice for engine "quickjs"`, msg)

	got, err := r.Lookup("quickjs")
	require.NoError(t, err)
	assert.Equal(t, "first", got.Description)
}

func TestZeroValue(t *testing.T) {
	var r registry.Registry
	assert.Empty(t, r.Engines())
	assert.Empty(t, r.Languages())
	assert.Empty(t, r.ByLanguage("javascript"))

	_, err := r.Lookup("quickjs")
	assert.EqualError(t, err, `registry: unknown engine "quickjs" (registered: none); forgotten registration?`)
	_, err = r.Default("javascript")
	assert.EqualError(t, err, `registry: unknown language "javascript" (registered: none); forgotten registration?`)
	_, err = r.Select("javascript", registry.Requirements{})
	assert.ErrorIs(t, err, registry.ErrUnknownLanguage)
	assert.ErrorIs(t, r.SetDefault("javascript", "quickjs"), registry.ErrUnknownLanguage)

	r.Register(entry("quickjs", strong("javascript")))
	assert.Len(t, r.Engines(), 1)
	assert.Len(t, registry.New().Engines(), 0)
}

func TestLookup(t *testing.T) {
	var r registry.Registry
	qjs := entry("quickjs", strong("javascript"))
	qjs.Description = "QuickJS in wazero"
	r.Register(qjs)
	r.Register(entry("goja", strong("javascript")))
	r.Register(entry("starlark", strong("starlark")))

	got, err := r.Lookup("quickjs")
	require.NoError(t, err)
	assert.Equal(t, "quickjs", got.Engine)
	assert.Equal(t, "javascript", got.Language)
	assert.Equal(t, "QuickJS in wazero", got.Description)
	assert.Equal(t, strong("javascript"), got.Capabilities)
	require.NotNil(t, got.Factory)
	_, ferr := got.Factory()
	assert.ErrorIs(t, ferr, errFake, "the registered factory is returned")

	_, err = r.Lookup("v8")
	assert.EqualError(t, err, `registry: unknown engine "v8" (registered: goja, quickjs, starlark); forgotten registration?`)
	assert.ErrorIs(t, err, registry.ErrUnknownEngine)
	assert.NotErrorIs(t, err, registry.ErrUnknownLanguage)
}

func TestListingsAreSorted(t *testing.T) {
	var r registry.Registry
	for _, e := range []registry.Entry{
		entry("zeta", strong("wasm")),
		entry("quickjs", strong("javascript")),
		entry("starlark", strong("starlark")),
		entry("goja", strong("javascript")),
		entry("extism", strong("wasm")),
		entry("alpha", strong("javascript")),
	} {
		r.Register(e)
	}

	engines := func(es []registry.Entry) []string {
		out := []string{}
		for _, e := range es {
			out = append(out, e.Engine)
		}
		return out
	}
	assert.Equal(t, []string{"alpha", "extism", "goja", "quickjs", "starlark", "zeta"}, engines(r.Engines()))
	assert.Equal(t, []string{"javascript", "starlark", "wasm"}, r.Languages())
	assert.Equal(t, []string{"alpha", "goja", "quickjs"}, engines(r.ByLanguage("javascript")))
	assert.Equal(t, []string{"extism", "zeta"}, engines(r.ByLanguage("wasm")))
	assert.Empty(t, r.ByLanguage("python"))
}

func TestListingsAreCopies(t *testing.T) {
	var r registry.Registry
	r.Register(entry("quickjs", strong("javascript")))

	es := r.Engines()
	es[0].Engine = "mutated"
	es[0].Capabilities.Memory = false
	byLang := r.ByLanguage("javascript")
	byLang[0].Description = "mutated"
	langs := r.Languages()
	langs[0] = "mutated"

	got, err := r.Lookup("quickjs")
	require.NoError(t, err)
	assert.True(t, got.Capabilities.Memory)
	assert.Empty(t, got.Description)
	assert.Equal(t, []string{"javascript"}, r.Languages())
}

func TestDefault(t *testing.T) {
	var r registry.Registry
	r.Register(entry("quickjs", strong("javascript")))
	r.Register(entry("goja", strong("javascript")))
	r.Register(entry("starlark", strong("starlark")))

	got, err := r.Default("javascript")
	require.NoError(t, err)
	assert.Equal(t, "quickjs", got.Engine, "without SetDefault, the first registered is the default")

	require.NoError(t, r.SetDefault("javascript", "goja"))
	got, err = r.Default("javascript")
	require.NoError(t, err)
	assert.Equal(t, "goja", got.Engine)

	got, err = r.Default("starlark")
	require.NoError(t, err)
	assert.Equal(t, "starlark", got.Engine, "another language's default is unaffected")

	_, err = r.Default("python")
	assert.EqualError(t, err, `registry: unknown language "python" (registered: javascript, starlark); forgotten registration?`)
	assert.ErrorIs(t, err, registry.ErrUnknownLanguage)
}

func TestSetDefaultErrors(t *testing.T) {
	tests := []struct {
		name, language, engine string
		want                   string
		is                     error
	}{
		{"unknown language", "python", "quickjs",
			`registry: unknown language "python" (registered: javascript, starlark); forgotten registration?`, registry.ErrUnknownLanguage},
		{"unknown engine", "javascript", "v8",
			`registry: unknown engine "v8" (registered: goja, quickjs, starlark); forgotten registration?`, registry.ErrUnknownEngine},
		{"engine of another language", "javascript", "starlark",
			`registry: engine "starlark" runs "starlark", not "javascript"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r registry.Registry
			r.Register(entry("quickjs", strong("javascript")))
			r.Register(entry("goja", strong("javascript")))
			r.Register(entry("starlark", strong("starlark")))

			err := r.SetDefault(tt.language, tt.engine)
			assert.EqualError(t, err, tt.want)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			got, err := r.Default("javascript")
			require.NoError(t, err)
			assert.Equal(t, "quickjs", got.Engine, "a failed SetDefault changes nothing")
		})
	}
}

// jsRegistry registers three JavaScript engines of different strength and
// one Starlark engine; "quickjs" is the default.
func jsRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	r := registry.New()
	r.Register(entry("quickjs", spi.Capabilities{Language: "javascript", Network: spi.NetworkNone,
		WallClock: spi.WallClockHard, Memory: true, CPU: false, FreshPerRun: true}))
	r.Register(entry("goja", spi.Capabilities{Language: "javascript", Network: spi.NetworkNone,
		WallClock: spi.WallClockSoft, Memory: false, CPU: false, FreshPerRun: true}))
	r.Register(entry("remote", spi.Capabilities{Language: "javascript", Network: spi.NetworkOpen,
		WallClock: spi.WallClockHard, Memory: true, CPU: true, FreshPerRun: false}))
	r.Register(entry("starlark", strong("starlark")))
	return r
}

func TestSelect(t *testing.T) {
	tests := []struct {
		name string
		req  registry.Requirements
		want string
	}{
		{"no requirements: the default", registry.Requirements{}, "quickjs"},
		{"memory and hard clock", registry.Requirements{Memory: true, WallClock: spi.WallClockHard}, "quickjs"},
		{"soft clock accepts a hard one", registry.Requirements{WallClock: spi.WallClockSoft}, "quickjs"},
		{"network none", registry.Requirements{Network: spi.NetworkNone, FreshPerRun: true}, "quickjs"},
		{"cpu: only remote", registry.Requirements{CPU: true}, "remote"},
		{"cpu with open network allowed", registry.Requirements{CPU: true, Network: spi.NetworkOpen}, "remote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsRegistry(t).Select("javascript", tt.req)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Engine)
		})
	}
}

func TestSelectTriesTheDefaultFirst(t *testing.T) {
	r := jsRegistry(t)
	require.NoError(t, r.SetDefault("javascript", "goja"))

	got, err := r.Select("javascript", registry.Requirements{FreshPerRun: true})
	require.NoError(t, err)
	assert.Equal(t, "goja", got.Engine, "the default qualifies, so it wins over engines sorted before it")

	got, err = r.Select("javascript", registry.Requirements{Memory: true})
	require.NoError(t, err)
	assert.Equal(t, "quickjs", got.Engine, "the default does not qualify: the others in name order")
}

func TestSelectNetworkOrder(t *testing.T) {
	mk := func(engine string, n spi.Network) registry.Entry {
		c := strong("javascript")
		c.Network = n
		return entry(engine, c)
	}
	tests := []struct {
		name    string
		entries []registry.Entry // the first is the default
		req     spi.Network
		want    string
		wantErr string
	}{
		{"allowlist accepts none", []registry.Entry{mk("a", spi.NetworkNone)}, spi.NetworkAllowlist, "a", ""},
		{"allowlist accepts allowlist", []registry.Entry{mk("a", spi.NetworkAllowlist)}, spi.NetworkAllowlist, "a", ""},
		{"allowlist refuses open", []registry.Entry{mk("a", spi.NetworkOpen)}, spi.NetworkAllowlist, "",
			`registry: no "javascript" engine meets the requirements: a lacks network allowlist or none (declares open)`},
		{"none refuses allowlist", []registry.Entry{mk("a", spi.NetworkAllowlist)}, spi.NetworkNone, "",
			`registry: no "javascript" engine meets the requirements: a lacks network none (declares allowlist)`},
		{"open accepts open", []registry.Entry{mk("a", spi.NetworkOpen)}, spi.NetworkOpen, "a", ""},
		{"none skips an open default", []registry.Entry{mk("z", spi.NetworkOpen), mk("b", spi.NetworkNone)}, spi.NetworkNone, "b", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r registry.Registry
			for _, e := range tt.entries {
				r.Register(e)
			}
			got, err := r.Select("javascript", registry.Requirements{Network: tt.req})
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Engine)
		})
	}
}

func TestSelectErrorNamesEveryShortfall(t *testing.T) {
	r := jsRegistry(t)
	req := registry.Requirements{Network: spi.NetworkNone, WallClock: spi.WallClockHard,
		Memory: true, CPU: true, FreshPerRun: true}

	got, err := r.Select("javascript", req)
	assert.Equal(t, registry.Entry{}, got)
	assert.EqualError(t, err, `registry: no "javascript" engine meets the requirements: `+
		`goja lacks memory, hard wall clock, cpu; `+
		`quickjs lacks cpu; `+
		`remote lacks fresh per run, network none (declares open)`)
	assert.ErrorIs(t, err, registry.ErrNoMatch)

	// The text is in engine-name order whichever engine is the default.
	require.NoError(t, r.SetDefault("javascript", "remote"))
	_, err2 := r.Select("javascript", req)
	require.Error(t, err2)
	assert.Equal(t, err.Error(), err2.Error())
}

func TestSelectRefusals(t *testing.T) {
	tests := []struct {
		name     string
		language string
		req      registry.Requirements
		want     string
		is       error
	}{
		{"unknown language", "python", registry.Requirements{},
			`registry: unknown language "python" (registered: javascript, starlark); forgotten registration?`, registry.ErrUnknownLanguage},
		{"network out of range", "javascript", registry.Requirements{Network: 4},
			"registry: invalid requirements: network value 4", nil},
		{"negative network", "javascript", registry.Requirements{Network: -1},
			"registry: invalid requirements: network value -1", nil},
		{"wall clock out of range", "javascript", registry.Requirements{WallClock: 3},
			"registry: invalid requirements: wall clock value 3", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsRegistry(t).Select(tt.language, tt.req)
			assert.EqualError(t, err, tt.want)
			assert.Equal(t, registry.Entry{}, got)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

func TestShortfalls(t *testing.T) {
	weakest := spi.Capabilities{Language: "x", Network: spi.NetworkOpen, WallClock: spi.WallClockSoft}
	tests := []struct {
		name string
		req  registry.Requirements
		caps spi.Capabilities
		want []string
	}{
		{"nothing required", registry.Requirements{}, weakest, nil},
		{"everything met", registry.Requirements{Network: spi.NetworkNone, WallClock: spi.WallClockHard,
			Memory: true, CPU: true, FreshPerRun: true}, strong("x"), nil},
		{"everything lacking", registry.Requirements{Network: spi.NetworkNone, WallClock: spi.WallClockHard,
			Memory: true, CPU: true, FreshPerRun: true}, weakest,
			[]string{"memory", "hard wall clock", "cpu", "fresh per run", "network none (declares open)"}},
		{"soft accepts soft", registry.Requirements{WallClock: spi.WallClockSoft}, weakest, nil},
		{"memory only", registry.Requirements{Memory: true}, weakest, []string{"memory"}},
		{"cpu only", registry.Requirements{CPU: true}, weakest, []string{"cpu"}},
		{"fresh only", registry.Requirements{FreshPerRun: true}, weakest, []string{"fresh per run"}},
		{"hard clock only", registry.Requirements{WallClock: spi.WallClockHard}, weakest, []string{"hard wall clock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.req.Shortfalls(tt.caps))
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	const writers, perWriter = 8, 25
	var r registry.Registry
	r.Register(entry("seed", strong("javascript")))

	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				lang := fmt.Sprintf("lang%d", i%3)
				r.Register(entry(fmt.Sprintf("engine-%d-%d", w, i), strong(lang)))
			}
		})
		wg.Go(func() {
			for range perWriter {
				_, err := r.Lookup("seed")
				assert.NoError(t, err)
				_, err = r.Select("javascript", registry.Requirements{Memory: true})
				assert.NoError(t, err)
				_ = r.Engines()
				_ = r.Languages()
				_ = r.ByLanguage("lang1")
				assert.NoError(t, r.SetDefault("javascript", "seed"))
				_, err = r.Default("lang2") // lang2 may not exist yet
				if err != nil {
					assert.ErrorIs(t, err, registry.ErrUnknownLanguage)
				}
			}
		})
	}
	wg.Wait()

	assert.Len(t, r.Engines(), 1+writers*perWriter)
	assert.Equal(t, []string{"javascript", "lang0", "lang1", "lang2"}, r.Languages())
	for w := range writers {
		for i := range perWriter {
			_, err := r.Lookup(fmt.Sprintf("engine-%d-%d", w, i))
			assert.NoError(t, err)
		}
	}
}

// TestLookupErrorsQuoteAnExcerpt: an unknown name of 1 MiB comes back as
// a short error (at most 1 KiB) that still says what was unknown and
// what is registered.
func TestLookupErrorsQuoteAnExcerpt(t *testing.T) {
	var r registry.Registry
	r.Register(entry("goja", strong("javascript")))
	huge := strings.Repeat("v", 1<<20) + "\x00"
	_, err := r.Lookup(huge)
	require.ErrorIs(t, err, registry.ErrUnknownEngine)
	assert.LessOrEqual(t, len(err.Error()), 1024)
	assert.Contains(t, err.Error(), `registry: unknown engine "vvvv`)
	assert.Contains(t, err.Error(), "registered: goja")
	for _, f := range []func() error{
		func() error { _, err := r.Default(huge); return err },
		func() error { _, err := r.Select(huge, registry.Requirements{}); return err },
		func() error { return r.SetDefault(huge, "goja") },
	} {
		err := f()
		require.ErrorIs(t, err, registry.ErrUnknownLanguage)
		assert.LessOrEqual(t, len(err.Error()), 1024)
		assert.Contains(t, err.Error(), `registry: unknown language "vvvv`)
		assert.Contains(t, err.Error(), "registered: javascript")
	}
	err = r.SetDefault("javascript", huge)
	require.ErrorIs(t, err, registry.ErrUnknownEngine)
	assert.LessOrEqual(t, len(err.Error()), 1024)
}
