package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunSuspendResume: run --suspend writes the continuation and exits
// 3 with the suspended failure; resume with the answer prints what a run
// answered live prints, the same --json value; a changed continuation is
// refused (64); the flags that go together are checked (64).
func TestRunSuspendResume(t *testing.T) {
	rows := script(t, "rows.json", `[1,2,3]`)
	yes := script(t, "yes.json", `true`)
	js := script(t, "purge.js", `const a = await host.rows(input.n);
const ok = await host.approve({rows: a});
({a, ok, t: Date.now(), r: Math.random()})`)
	wait := filepath.Join(t.TempDir(), "wait.json")

	// A long wall clock: under -race on a loaded machine one QuickJS run
	// took 8.8 s, past the default 5 s (the continuation keeps it for
	// the resumption).
	live := runMain("", "run", "--engine", "quickjs", "--json", "--timeout", "2m", "--input", `{"n":2}`, "--host", "rows="+rows, "--host", "approve="+yes, js)
	require.Equal(t, exitOK, live.code, live.stderr)
	var want struct{ Value json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(live.stdout), &want), live.stdout)

	res := runMain("", "run", "--engine", "quickjs", "--json", "--timeout", "2m", "--input", `{"n":2}`, "--host", "rows="+rows, "--suspend", "approve", "--continuation", wait, js)
	require.Equal(t, exitSuspend, res.code, res.stderr)
	var suspended struct {
		OK      bool
		Code    string
		Receipt struct{ Outcome string }
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &suspended), res.stdout)
	assert.Equal(t, "suspended", suspended.Code)
	assert.Equal(t, "suspended", suspended.Receipt.Outcome)
	require.FileExists(t, wait)

	res = runMain("", "resume", wait, "--answer", "true", "--host", "rows="+rows, "--json")
	require.Equal(t, exitOK, res.code, res.stderr)
	var got struct {
		OK      bool
		Value   json.RawMessage
		Receipt struct{ Previous string }
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
	assert.True(t, got.OK)
	assert.JSONEq(t, string(want.Value), string(got.Value))
	assert.NotEmpty(t, got.Receipt.Previous)

	res = runMain("", "resume", wait, "--answer", "true", "--host", "rows="+rows)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.JSONEq(t, string(want.Value), res.stdout)

	b, err := os.ReadFile(wait)
	require.NoError(t, err)
	var cont map[string]any
	require.NoError(t, json.Unmarshal(b, &cont))
	cont["input"] = map[string]any{"n": 3}
	tampered, err := json.Marshal(cont)
	require.NoError(t, err)
	bad := script(t, "bad.json", string(tampered))
	res = runMain("", "resume", bad, "--answer", "true", "--host", "rows="+rows, "--json")
	assert.Equal(t, exitUsage, res.code, res.stderr)
	assert.Empty(t, res.stdout)

	for _, args := range [][]string{
		{"run", "--engine", "quickjs", "--suspend", "approve", js},
		{"run", "--engine", "quickjs", "--continuation", wait, js},
		{"run", "--engine", "quickjs", "--suspend", "rows", "--continuation", wait, "--host", "rows=" + rows, js},
		{"resume", wait},
		{"resume", wait, "--answer", "{"},
	} {
		res := runMain("", args...)
		assert.Equal(t, exitUsage, res.code, "%v: %s", args, res.stderr)
		assertOneLine(t, res.stderr)
	}
}
