package mcpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/mcpserver"
	"github.com/sandbank/sandbank/storage"
)

// TestReceiptsAreKept: with Options.Receipts, every run answered with its
// record (a value, a typed failure) has its receipt kept under the run id
// its result names; a refused call keeps none; a store that cannot keep
// it makes the call a protocol error, not a result; without the option a
// result names no run.
func TestReceiptsAreKept(t *testing.T) {
	f := newFakes()
	receipts, err := storage.NewMemoryReceipts(nil)
	require.NoError(t, err)
	cs := connect(t, newServer(t, f, &mcpserver.Options{Receipts: receipts}, "javascript"), nil)
	for _, script := range []string{"echo", "throw"} {
		_, r, err := call(t, cs, "run_javascript", map[string]any{"script": script, "input": 1})
		require.NoError(t, err, script)
		require.True(t, storage.ValidRunID(r.Run), "%s: run %q", script, r.Run)
		kept, ok, err := receipts.Get(r.Run)
		require.NoError(t, err)
		require.True(t, ok, script)
		want, err := json.Marshal(r.Receipt)
		require.NoError(t, err)
		got, err := json.Marshal(kept)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(got), script)
	}
	_, r, err := call(t, cs, "run_javascript", map[string]any{"input": 1})
	require.NoError(t, err)
	assert.NotEmpty(t, r.InvalidCall)
	assert.Empty(t, r.Run)

	closed, err := storage.NewReceiptLog(t.TempDir(), nil)
	require.NoError(t, err)
	require.NoError(t, closed.Close()) // every Append now fails
	cs = connect(t, newServer(t, f, &mcpserver.Options{Receipts: closed}, "javascript"), nil)
	_, _, err = call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": 1})
	require.ErrorContains(t, err, "keeping the run's receipt failed")

	cs = connect(t, newServer(t, f, nil, "javascript"), nil)
	_, r, err = call(t, cs, "run_javascript", map[string]any{"script": "echo", "input": 1})
	require.NoError(t, err)
	assert.True(t, r.OK)
	assert.Empty(t, r.Run)
}
