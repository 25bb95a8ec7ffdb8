package effect

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/sandbank/sandbank/internal/fakebackend"
	"github.com/sandbank/sandbank/spi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSmokeEcho(t *testing.T) {
	store := NewMemoryStore()
	addr, err := store.Put([]byte("input"))
	require.NoError(t, err)
	fb := fakebackend.New(fakebackend.Capabilities(), fakebackend.Echo())
	e, err := New(store, fb, nil)
	require.NoError(t, err)
	out, err := e.Evaluate(context.Background(), Call{Script: addr, Input: map[string]any{"b": 1, "a": "<x>"}})
	require.NoError(t, err)
	assert.Equal(t, `{"a":"<x>","b":1}`, string(out))
	_, err = e.Evaluate(context.Background(), Call{Script: addr, Input: json.RawMessage(`{"a":1}`), Shape: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
	t.Log(err)
	fb.SetBehavior(fakebackend.Return(spi.Threw("TypeError", "boom")))
	_, err = e.Evaluate(context.Background(), Call{Script: addr})
	t.Log(err)
}
