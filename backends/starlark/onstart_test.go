package starlark_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/starlark"
	"github.com/sandbank/sandbank/spi"
)

// TestOnStart: the hook is called once the script is compiled and its
// input converted, and only then: a syntax error or an input that is not
// JSON never reaches it, and a script sees the run already started.
func TestOnStart(t *testing.T) {
	calls := 0
	b, err := starlark.New(&starlark.Options{OnStart: func() { calls++ }})
	require.NoError(t, err)
	ctx := context.Background()

	_, err = b.Evaluate(ctx, spi.Request{Script: []byte("def main(input):\n  return ("), Input: []byte(`{}`)})
	require.NoError(t, err)
	assert.Zero(t, calls, "a syntax error is found before the start")

	_, err = b.Evaluate(ctx, spi.Request{Script: []byte("def main(input):\n    return input"), Input: []byte(`{`)})
	require.Error(t, err)
	assert.Zero(t, calls, "the input is converted before the start")

	out, err := b.Evaluate(ctx, spi.Request{Script: []byte("def main(input):\n    return input"), Input: []byte(`[1]`)})
	require.NoError(t, err)
	assert.Equal(t, spi.OK([]byte(`[1]`)), out)
	assert.Equal(t, 1, calls)
}
