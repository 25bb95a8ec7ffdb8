package builtin

import (
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/backends/starlarkwasm"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/conformance"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// direct builds each built-in backend the way an application would, with
// its own package's New and default options: the declaration the registry
// must carry.
var direct = map[string]spi.Factory{
	"quickjs": func() (spi.Backend, error) { return quickjs.New(nil) },
	"quickjs-fresh": func() (spi.Backend, error) {
		return quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh})
	},
	"starlark":      func() (spi.Backend, error) { return starlark.New(nil) },
	"starlark-wasm": func() (spi.Backend, error) { return starlarkwasm.New(nil) },
	"extism":        func() (spi.Backend, error) { return extism.New(nil) },
	"goja":          func() (spi.Backend, error) { return goja.New(nil) },
}

// withTypeScript returns names plus NAME-ts for each JavaScript engine
// among them, sorted.
func withTypeScript(names []string) []string {
	out := slices.Clone(names)
	for _, n := range names {
		if strings.HasPrefix(n, "quickjs") || n == "goja" {
			out = append(out, n+TypeScriptSuffix)
		}
	}
	slices.Sort(out)
	return out
}

// directTypeScript builds the TypeScript engine over JavaScript engine js
// the way an application would.
func directTypeScript(js string) spi.Factory {
	return func() (spi.Backend, error) {
		b, err := direct[js]()
		if err != nil {
			return nil, err
		}
		return typescript.Wrap(b, nil)
	}
}

func declared(t *testing.T, f spi.Factory) spi.Capabilities {
	t.Helper()
	b, err := f()
	require.NoError(t, err)
	defer func() {
		if c, ok := b.(io.Closer); ok {
			assert.NoError(t, c.Close())
		}
	}()
	return b.Capabilities()
}

func TestRegister(t *testing.T) {
	var r registry.Registry
	Register(&r)

	var names []string
	for _, e := range r.Engines() {
		names = append(names, e.Engine)
	}
	assert.Equal(t, withNativeStarlark(withMachineEngines(withTypeScript(withCgoEngines([]string{"extism", "goja", "quickjs", "quickjs-fresh", "starlark", "starlark-wasm"})))), names, "every built-in backend is registered, and every JavaScript engine as TypeScript")

	for _, e := range r.Engines() {
		t.Run(e.Engine, func(t *testing.T) {
			want, ok := direct[e.Engine]
			if js, isTS := strings.CutSuffix(e.Engine, TypeScriptSuffix); isTS {
				_, ok = direct[js]
				want = directTypeScript(js)
			}
			require.True(t, ok, "the test knows engine %s", e.Engine)
			assert.Equal(t, declared(t, want), e.Capabilities, "the entry carries the backend's own declaration")
			assert.Equal(t, declared(t, e.Factory), e.Capabilities, "the entry's factory builds what the entry declares")
			assert.Equal(t, e.Capabilities.Language, e.Language)
			assert.NotEmpty(t, e.Description)

			set, ok := Fixtures(e.Language)
			require.True(t, ok, "engine %s has a fixture set for %s", e.Engine, e.Language)
			require.NotNil(t, set)
			assert.Equal(t, e.Language, set.Language)
			assert.Contains(t, set.Cases(), "echo")
		})
	}

	def, err := r.Default("javascript")
	require.NoError(t, err)
	assert.Equal(t, "quickjs", def.Engine, "quickjs is the javascript default")
	def, err = r.Default("typescript")
	require.NoError(t, err)
	assert.Equal(t, "quickjs-ts", def.Engine, "quickjs-ts is the typescript default")
}

func TestRegisterTwicePanics(t *testing.T) {
	var r registry.Registry
	Register(&r)
	assert.Panics(t, func() { Register(&r) }, "a duplicate engine is a programmer error")
}

func TestFixturesUnknownLanguage(t *testing.T) {
	set, ok := Fixtures("cobol")
	assert.False(t, ok)
	assert.Nil(t, set)
}

func TestCPUBudgetFactory(t *testing.T) {
	for _, name := range []string{"quickjs", "quickjs-fresh", "goja", "extism", "nope", "quickjs-ts", "goja-ts", "starlark-ts", "-ts"} {
		assert.Nil(t, CPUBudgetFactory(name), "%s has no CPU budget option", name)
	}
	f := CPUBudgetFactory("starlark")
	require.NotNil(t, f)
	assert.Equal(t, declared(t, direct["starlark"]), declared(t, f), "the budget factory builds the same engine")
}

// TestCPUBudgetIsSmall proves the budget factory's backend stops a script
// that the default backend finishes: the budget is smaller than the default.
func TestCPUBudgetIsSmall(t *testing.T) {
	require.Less(t, int64(CPUBudgetSteps), starlark.DefaultMaxSteps)
	src := []byte("def main(input):\n    n = 0\n    for i in range(20000):\n        n += i\n    return n\n")
	store := new(storage.MemoryStore)
	addr, err := store.Put(src)
	require.NoError(t, err)
	eval := func(f spi.Factory) (json.RawMessage, error) {
		b, err := f()
		require.NoError(t, err)
		eff, err := effect.New(store, b, nil)
		require.NoError(t, err)
		defer eff.Close()
		return eff.Evaluate(context.Background(), effect.Call{Script: addr})
	}
	v, err := eval(direct["starlark"])
	require.NoError(t, err, "the default budget finishes the script")
	assert.JSONEq(t, "199990000", string(v))

	_, err = eval(CPUBudgetFactory("starlark"))
	var f *effect.Failure
	require.ErrorAs(t, err, &f, "the small budget stops it")
	assert.Equal(t, record.CodeLimitExceeded, f.Code)
	assert.Equal(t, record.LimitCPU, f.Kind)
}

func TestCPUBudgetStopsTheLoop(t *testing.T) {
	set, ok := Fixtures("starlark")
	if !ok {
		t.Skip("no starlark fixture set yet")
	}
	rep, err := conformance.Check(context.Background(), direct["starlark"], &conformance.Options{
		Fixtures:  set,
		CPUBudget: CPUBudgetFactory("starlark"),
		Cases:     []string{"cpu_budget"},
	})
	require.NoError(t, err)
	require.Len(t, rep.Cases, 1)
	assert.Equal(t, conformance.StatusPass, rep.Cases[0].Status, rep.Cases[0].Reason)
}

// TestRegisterBuildsNoBackend: Register takes each entry's capabilities
// from its declaration and calls no factory, so listing the engines never
// builds (compiles, rewrites) a backend; a factory runs when called.
func TestRegisterBuildsNoBackend(t *testing.T) {
	built := 0
	fake := func(name string, javascript bool) engine {
		caps := fakebackend.Capabilities()
		if javascript {
			caps.Language = "javascript"
		}
		return engine{
			name:        name,
			javascript:  javascript,
			description: name,
			declare:     func() spi.Capabilities { return caps },
			factory: func() (spi.Backend, error) {
				built++
				return fakebackend.New(caps, nil), nil
			},
		}
	}
	var r registry.Registry
	registerAll(&r, []engine{fake("one", false), fake("two", true)})
	assert.Zero(t, built, "registering builds no backend")
	require.Len(t, r.Engines(), 3, "one, two and two-ts")

	e, err := r.Lookup("two" + TypeScriptSuffix)
	require.NoError(t, err)
	assert.Equal(t, "typescript", e.Capabilities.Language)
	b, err := e.Factory()
	require.NoError(t, err)
	assert.Equal(t, 1, built, "the factory builds the backend when called")
	assert.Equal(t, e.Capabilities, b.Capabilities(), "the TypeScript entry declares what its backend reports")
	if c, ok := b.(io.Closer); ok {
		assert.NoError(t, c.Close())
	}
}

// CacheFactory builds each engine as Register registers it (same backend
// type, same declaration), plus the cache directory; engines without a
// cache option have none.
func TestCacheFactory(t *testing.T) {
	var r registry.Registry
	Register(&r)
	withCache := 0
	for _, e := range r.Engines() {
		f := CacheFactory(e.Engine, t.TempDir())
		switch e.Engine {
		case "goja", "starlark", "extism", "goja-ts", "starlark-native":
			assert.Nil(t, f, e.Engine)
			continue
		}
		require.NotNil(t, f, "%s has a compiled-module cache option", e.Engine)
		withCache++
		cached, err := f()
		require.NoError(t, err, e.Engine)
		registered, err := e.Factory()
		require.NoError(t, err, e.Engine)
		assert.IsType(t, registered, cached, e.Engine)
		assert.Equal(t, registered.Capabilities(), cached.Capabilities(), e.Engine)
		for _, b := range []spi.Backend{cached, registered} {
			if c, ok := b.(io.Closer); ok {
				assert.NoError(t, c.Close())
			}
		}
	}
	assert.GreaterOrEqual(t, withCache, 4, "quickjs and quickjs-fresh, as JavaScript and as TypeScript")
	assert.Nil(t, CacheFactory("no-such-engine", t.TempDir()))
}
