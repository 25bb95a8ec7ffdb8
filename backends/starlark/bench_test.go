package starlark_test

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
)

//go:embed testdata/reshape.star
var reshapeScript []byte

var benchInput = json.RawMessage(`{"text":"echo ✓ é","n":7,"list":[1,"two",null,true,false,{"k":[]}]}`)

// newEffect returns an effect over a default Starlark backend and the
// address of src in its store.
func newEffect(tb testing.TB, src []byte) (*effect.Effect, record.Address) {
	tb.Helper()
	backend, err := starlark.New(nil)
	require.NoError(tb, err)
	scripts := new(storage.MemoryStore)
	addr, err := scripts.Put(src)
	require.NoError(tb, err)
	e, err := effect.New(scripts, backend, nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = e.Close() })
	return e, addr
}

// BenchmarkFreshEcho: one echo through the effect; every iteration
// compiles the script and runs it on a new thread with fresh globals.
func BenchmarkFreshEcho(b *testing.B) {
	e, addr := newEffect(b, []byte(echo))
	ctx := context.Background()
	call := effect.Call{Script: addr, Input: benchInput}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReshape: the shared reshape benchmark (testdata/reshape.star,
// the translation of ../shared/bench/reshape.js) through the effect.
func BenchmarkReshape(b *testing.B) {
	e, addr := newEffect(b, reshapeScript)
	ctx := context.Background()
	call := effect.Call{Script: addr, Input: json.RawMessage(`null`)}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Evaluate(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}

// reshapeInGo computes what reshape.js returns, in Go, in the same order
// of floating-point operations.
func reshapeInGo() any {
	type group struct {
		Group int     `json:"group"`
		Count int     `json:"count"`
		Sum   float64 `json:"sum"`
		Mean  float64 `json:"mean"`
	}
	const n = 10000
	groups := make([]group, 17)
	for id := range n {
		g := &groups[id%17]
		g.Group = id % 17
		g.Count++
		g.Sum += float64(id) * 1.5
	}
	for i := range groups {
		groups[i].Mean = groups[i].Sum / float64(groups[i].Count)
	}
	slices.SortFunc(groups, func(x, y group) int {
		return cmp.Or(cmp.Compare(y.Sum, x.Sum), cmp.Compare(x.Group, y.Group))
	})
	return map[string]any{"n": n, "groups": len(groups), "top": groups[0], "result": groups}
}

// TestReshapeMatchesTheJavaScriptBenchmark: the translation returns what
// reshape.js returns, computed independently in Go.
func TestReshapeMatchesTheJavaScriptBenchmark(t *testing.T) {
	e, addr := newEffect(t, reshapeScript)
	got, err := e.Evaluate(context.Background(), effect.Call{Script: addr, Input: json.RawMessage(`null`)})
	require.NoError(t, err)
	want, err := json.Marshal(reshapeInGo())
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	// The groups really are ordered by sum, descending (not trivially).
	var r struct {
		Result []struct {
			Group int     `json:"group"`
			Sum   float64 `json:"sum"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(got, &r))
	require.Len(t, r.Result, 17)
	assert.Equal(t, 3, r.Result[0].Group, "groups 0-3 have 589 rows, group 3 the largest ids")
	assert.Greater(t, r.Result[0].Sum, r.Result[16].Sum)
}
