package typescript_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/quickjs"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// recorder is a JavaScript backend that records the scripts it is handed
// and answers OK with null.
type recorder struct {
	mu      sync.Mutex
	scripts []string
}

func (r *recorder) Capabilities() spi.Capabilities {
	return spi.Capabilities{Language: "javascript", Network: spi.NetworkNone, WallClock: spi.WallClockHard, Memory: true, FreshPerRun: true}
}

func (r *recorder) Evaluate(_ context.Context, req spi.Request) (spi.Outcome, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scripts = append(r.scripts, string(req.Script))
	for i := range req.Script { // a backend may scribble on what it is handed
		req.Script[i] = 'x'
	}
	return spi.Outcome{Kind: spi.KindOK, Value: json.RawMessage("null")}, nil
}

func (r *recorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.scripts...)
}

// engines builds each shipped pure-Go JavaScript engine wrapped for
// TypeScript.
func engines(t *testing.T) map[string]spi.Backend {
	t.Helper()
	out := map[string]spi.Backend{}
	g, err := goja.New(nil)
	require.NoError(t, err)
	out["goja"] = g
	q, err := quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh})
	require.NoError(t, err)
	out["quickjs-fresh"] = q
	for name, js := range out {
		ts, err := typescript.Wrap(js, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = ts.Close() })
		out[name] = ts
	}
	return out
}

// run evaluates source with input on backend through the effect.
func run(t *testing.T, backend spi.Backend, source string, input any) (json.RawMessage, error) {
	t.Helper()
	store := new(storage.MemoryStore)
	addr, err := store.Put([]byte(source))
	require.NoError(t, err)
	eff, err := effect.New(store, backend, nil)
	require.NoError(t, err)
	return eff.Evaluate(context.Background(), effect.Call{Script: addr, Input: input})
}

func TestTheCompletionValueIsTheResult(t *testing.T) {
	for name, b := range engines(t) {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, b, "const n: number = input.a;\nn + 1\n", map[string]int{"a": 41})
			require.NoError(t, err)
			assert.JSONEq(t, "42", string(out))
		})
	}
}

// typeSyntax uses every kind of type syntax the package documents.
const typeSyntax = `
interface Row { id: number; tags?: string[] }
type Pair<T> = [T, T];
enum Color { Red, Green = 5, Blue }
namespace Geo { export const origin = { x: 0, y: 0 } }
class Box<T> {
  count = 0;
  constructor(public readonly value: T, private label: string = "box") {}
  tag(): string { return this.label + ":" + String(this.value) }
}
function first<T>(xs: T[]): T | undefined { return xs[0] }
const rows = input.rows as Row[];
const pair: Pair<number> = [rows.length, first(rows)!.id];
const conf = { mode: "strict", depth: 2 } as const satisfies Record<string, unknown>;
const box = new Box<number>(7);
({ pair, color: Color.Blue, origin: Geo.origin, tag: box.tag(), count: box.count, conf, ids: rows.map((r: Row): number => r.id) })
`

func TestTypeSyntaxIsStripped(t *testing.T) {
	input := map[string]any{"rows": []map[string]any{{"id": 3}, {"id": 4, "tags": []string{"a"}}}}
	want := `{"color":6,"conf":{"depth":2,"mode":"strict"},"count":0,"ids":[3,4],"origin":{"x":0,"y":0},"pair":[2,3],"tag":"box:7"}`
	for name, b := range engines(t) {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, b, typeSyntax, input)
			require.NoError(t, err)
			assert.Equal(t, want, string(out))
		})
	}
}

func TestASyntaxErrorNamesTheTypeScriptLineAndColumn(t *testing.T) {
	var rec recorder
	ts, err := typescript.Wrap(&rec, nil)
	require.NoError(t, err)
	_, err = run(t, ts, "const a: number = 1;\nlet x: number = ;\n", nil)
	var f *effect.Failure
	require.True(t, errors.As(err, &f), "got %v", err)
	assert.Equal(t, record.CodeScriptError, f.Code)
	assert.Equal(t, "SyntaxError", f.Name)
	assert.Equal(t, `script.ts:2:17: Unexpected ";"`, f.Message)
	assert.Empty(t, rec.seen(), "a script that does not parse never reaches the engine")
}

func TestModuleSyntaxIsRefused(t *testing.T) {
	var rec recorder
	ts, err := typescript.Wrap(&rec, nil)
	require.NoError(t, err)
	for _, src := range []string{
		"export const x = 1;\nx",
		"import { a } from 'b';\na",
		"import * as b from 'b';\nb",
		"import 'side-effect';\n1",
		"const y = 2;\nexport { y };\ny",
		"export default 3",
	} {
		_, err := run(t, ts, src, nil)
		var f *effect.Failure
		require.True(t, errors.As(err, &f), "%q: got %v", src, err)
		assert.Equal(t, "SyntaxError", f.Name, src)
		assert.Contains(t, f.Message, "module syntax", src)
	}
	assert.Empty(t, rec.seen())
}

func TestWhatOnlyLooksLikeModuleSyntaxRuns(t *testing.T) {
	for name, b := range engines(t) {
		t.Run(name, func(t *testing.T) {
			// A template literal whose second line starts with "export ",
			// import type (type syntax, removed), and import() as a name.
			out, err := run(t, b, "import type { Row } from './rows';\nconst t: string = `a\nexport b\nimport {c}`;\nconst r = {} as Row;\n[t, typeof r]", nil)
			require.NoError(t, err)
			assert.Equal(t, `["a\nexport b\nimport {c}","object"]`, string(out))
		})
	}
}

func TestDecoratorsAreStandardDecorators(t *testing.T) {
	// experimentalDecorators is off: a decorator receives the class and a
	// context object (TC39 decorators), not TypeScript's (target, key,
	// descriptor), and it runs on every engine although none has
	// decorators natively.
	src := "const seen: string[] = [];\n" +
		"function mark(value: any, context: { kind: string; name?: string }) { seen.push(context.kind + ':' + context.name); return value }\n" +
		"@mark class Shape { @mark area() { return 1 } }\n" +
		"new Shape().area();\n" +
		"seen"
	for name, b := range engines(t) {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, b, src, nil)
			require.NoError(t, err)
			assert.Equal(t, `["method:area","class:Shape"]`, string(out))
		})
	}
}

func TestTransformsAreCachedAndTheCacheCannotBeCorrupted(t *testing.T) {
	var rec recorder
	ts, err := typescript.Wrap(&rec, nil)
	require.NoError(t, err)
	for range 3 {
		_, err := run(t, ts, "const n: number = 1;\nn", nil)
		require.NoError(t, err)
	}
	seen := rec.seen()
	require.Len(t, seen, 3)
	assert.Equal(t, "const n = 1;\nn;\n", seen[0])
	// The recorder overwrote every script it was handed: the cache keeps
	// its own copy.
	assert.Equal(t, seen[0], seen[1])
	assert.Equal(t, seen[0], seen[2])
}

func TestWrapRefusesWhatIsNotJavaScript(t *testing.T) {
	_, err := typescript.Wrap(nil, nil)
	require.Error(t, err)
	var rec recorder
	ts, err := typescript.Wrap(&rec, nil)
	require.NoError(t, err)
	_, err = typescript.Wrap(ts, nil)
	assert.ErrorContains(t, err, `"typescript", not "javascript"`)
	_, err = typescript.Wrap(&rec, &typescript.Options{CacheBytes: -1})
	assert.Error(t, err)
}

func TestCapabilitiesAreTheInnerBackendsWithTheLanguageTypeScript(t *testing.T) {
	var rec recorder
	ts, err := typescript.Wrap(&rec, nil)
	require.NoError(t, err)
	want := rec.Capabilities()
	want.Language = typescript.Language
	assert.Equal(t, want, ts.Capabilities())
}

func TestTheInnerBackendsScriptBoundIsKept(t *testing.T) {
	js, err := goja.New(nil)
	require.NoError(t, err)
	ts, err := typescript.Wrap(js, nil)
	require.NoError(t, err)
	assert.Equal(t, js.MaxScriptBytes(), ts.MaxScriptBytes())
	var rec recorder
	ts, err = typescript.Wrap(&rec, nil)
	require.NoError(t, err)
	assert.Zero(t, ts.MaxScriptBytes(), "no bound of its own")
}

// leftoverBackend is a JavaScript backend that reports n stopped runs
// still going on.
type leftoverBackend struct {
	spi.Backend
	n int
}

func (l leftoverBackend) Leftovers() int { return l.n }

// TestLeftoversAreTheInnerBackends: the wrapper reports its inner
// backend's leftovers (goja's), and none for a backend that reports none.
func TestLeftoversAreTheInnerBackends(t *testing.T) {
	js, err := goja.New(nil)
	require.NoError(t, err)
	ts, err := typescript.Wrap(leftoverBackend{Backend: js, n: 3}, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, ts.Leftovers())
	q, err := quickjs.New(&quickjs.Options{Mode: quickjs.ModeFresh})
	require.NoError(t, err)
	ts, err = typescript.Wrap(q, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.Close() })
	assert.Equal(t, 0, ts.Leftovers())
}
