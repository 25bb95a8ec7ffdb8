package workloads_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/extism"
	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/backends/typescript"
	"github.com/sandbank/sandbank/bench/workloads"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/spi"
	"github.com/sandbank/sandbank/storage"
)

// evaluate runs script on backend through the effect and returns the value.
func evaluate(t *testing.T, backend spi.Backend, script []byte) json.RawMessage {
	t.Helper()
	store := new(storage.MemoryStore)
	addr, err := store.Put(script)
	require.NoError(t, err)
	eff, err := effect.New(store, backend, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = eff.Close() })
	v, err := eff.Evaluate(context.Background(), effect.Call{Script: addr, Input: json.RawMessage("null")})
	require.NoError(t, err)
	return v
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v), "%s", b)
	return v
}

// TestReshapeTranslationsReturnTheExpectedValue runs every translation on
// a real engine of its language and compares it with the expected value.
func TestReshapeTranslationsReturnTheExpectedValue(t *testing.T) {
	want := decode(t, workloads.ReshapeExpected())
	for _, tc := range []struct {
		language string
		backend  func() (spi.Backend, error)
	}{
		{"javascript", func() (spi.Backend, error) { return goja.New(nil) }},
		{"starlark", func() (spi.Backend, error) { return starlark.New(nil) }},
		{"typescript", func() (spi.Backend, error) {
			js, err := goja.New(nil)
			if err != nil {
				return nil, err
			}
			return typescript.Wrap(js, nil)
		}},
		{"wasm", func() (spi.Backend, error) { return extism.New(nil) }},
	} {
		t.Run(tc.language, func(t *testing.T) {
			script, ok := workloads.Reshape(tc.language)
			require.True(t, ok)
			b, err := tc.backend()
			require.NoError(t, err)
			got := decode(t, evaluate(t, b, script))
			assert.Equal(t, want, got)
		})
	}
}

// TestExpectedValueShape pins what the expected value says, so that a
// regenerated golden file with a different workload is noticed.
func TestExpectedValueShape(t *testing.T) {
	var v struct {
		N      int `json:"n"`
		Groups int `json:"groups"`
		Top    struct {
			Group int     `json:"group"`
			Count int     `json:"count"`
			Sum   float64 `json:"sum"`
		} `json:"top"`
		Result []json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal(workloads.ReshapeExpected(), &v))
	assert.Equal(t, 10000, v.N)
	assert.Equal(t, 17, v.Groups)
	assert.Len(t, v.Result, 17)
	// Group 3 (ids 3, 20, 37, ...) has the largest sum.
	sum := 0.0
	count := 0
	for id := 3; id < 10000; id += 17 {
		sum += float64(id) * 1.5
		count++
	}
	assert.Equal(t, 3, v.Top.Group)
	assert.Equal(t, count, v.Top.Count)
	assert.Equal(t, sum, v.Top.Sum)
}

func TestReshapeUnknownLanguage(t *testing.T) {
	_, ok := workloads.Reshape("cobol")
	assert.False(t, ok)
	for _, l := range workloads.Languages() {
		_, ok := workloads.Reshape(l)
		assert.True(t, ok, l)
	}
}

// TestReshapeJSIsTheSharedBenchmark fails when reshape.js drifts from the
// shared benchmark it copies (skipped where shared/ is not beside the
// repository).
func TestReshapeJSIsTheSharedBenchmark(t *testing.T) {
	shared := filepath.Join("..", "..", "..", "shared", "bench", "reshape.js")
	want, err := os.ReadFile(shared)
	if os.IsNotExist(err) {
		t.Skipf("%s is not here", shared)
	}
	require.NoError(t, err)
	got, _ := workloads.Reshape("javascript")
	assert.Equal(t, string(want), string(got))
}

// TestReshapeWasmMatchesSource fails when reshape.wasm is not what
// wat2wasm builds from reshape.wat (skipped without wat2wasm).
func TestReshapeWasmMatchesSource(t *testing.T) {
	bin, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm (Debian package wabt) is not installed")
	}
	out := filepath.Join(t.TempDir(), "reshape.wasm")
	require.NoError(t, exec.Command(bin, "reshape.wat", "-o", out).Run())
	want, err := os.ReadFile(out)
	require.NoError(t, err)
	got, _ := workloads.Reshape("wasm")
	assert.True(t, bytes.Equal(want, got), "reshape.wasm is stale: run go generate ./bench/workloads")
}
