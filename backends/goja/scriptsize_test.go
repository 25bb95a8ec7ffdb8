package goja_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/goja"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/record"
	"github.com/sandbank/sandbank/storage"
)

// TestAnOversizedScriptIsTheEffectsScriptTooLarge checks that goja's
// script ceiling reaches the effect, which refuses a larger script with the
// typed scriptTooLarge every engine reports, before goja parses it.
func TestAnOversizedScriptIsTheEffectsScriptTooLarge(t *testing.T) {
	b, err := goja.New(nil)
	require.NoError(t, err)
	eff, err := effect.New(new(storage.MemoryStore), b, nil)
	require.NoError(t, err)
	limit := b.MaxScriptBytes()
	require.Positive(t, limit)
	script := "1;" + strings.Repeat(" ", limit)
	_, err = eff.Evaluate(context.Background(), effect.Call{Source: []byte(script)})
	var f *effect.Failure
	require.ErrorAs(t, err, &f)
	assert.Equal(t, record.CodeScriptTooLarge, f.Code)
	assert.Equal(t, int64(len(script)), f.Bytes)
	assert.Equal(t, int64(limit), f.Limit)

	out, err := eff.Evaluate(context.Background(), effect.Call{Source: []byte(script[:limit])})
	require.NoError(t, err, "a script at the ceiling runs")
	assert.Equal(t, "1", string(out))
}
