package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeRefusesTampered: a continuation edited after the run wrote it
// (a logged answer changed, the pending call changed, its signature
// stripped or made by another key while --keys is given) is refused,
// exit code 64, nothing printed on stdout; the untouched one resumes.
func TestResumeRefusesTampered(t *testing.T) {
	dir := t.TempDir()
	rows := script(t, "rows.json", `[1,2,3]`)
	js := script(t, "purge.js", `const a = await host.rows(input.n);
const ok = await host.approve({rows: a});
({a, ok})`)
	mine, other := filepath.Join(dir, "mine"), filepath.Join(dir, "other")
	for _, k := range []string{mine, other} {
		res := runMain("", "keygen", k)
		require.Equal(t, exitOK, res.code, res.stderr)
	}
	keys := filepath.Join(dir, "keys")
	require.NoError(t, os.Mkdir(keys, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(keys, "mine.pub"), readFileBytes(t, mine+".pub"), 0o600))

	suspend := func(key string) string {
		wait := filepath.Join(t.TempDir(), "wait.json")
		res := runMain("", "run", "--engine", "quickjs", "--input", `{"n":2}`, "--host", "rows="+rows,
			"--suspend", "approve", "--continuation", wait, "--sign-key", key+".key", js)
		require.Equal(t, exitSuspend, res.code, res.stderr)
		return wait
	}
	edit := func(wait string, change func(cont map[string]any)) string {
		var cont map[string]any
		require.NoError(t, json.Unmarshal(readFileBytes(t, wait), &cont))
		require.Len(t, cont["hostCalls"], 2)
		change(cont)
		b, err := json.Marshal(cont)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(wait, b, 0o600))
		return wait
	}
	cases := map[string]string{
		"answer changed": edit(suspend(mine), func(cont map[string]any) {
			cont["hostCalls"].([]any)[0].(map[string]any)["answer"] = []int{9}
		}),
		"pending changed": edit(suspend(mine), func(cont map[string]any) {
			cont["hostCalls"].([]any)[1].(map[string]any)["args"] = map[string]any{"rows": []int{}}
		}),
		"signature stripped": edit(suspend(mine), func(cont map[string]any) {
			delete(cont["receipt"].(map[string]any), "signature")
		}),
		"signed by another key": suspend(other),
	}
	for name, wait := range cases {
		t.Run(name, func(t *testing.T) {
			res := runMain("", "resume", wait, "--answer", "true", "--host", "rows="+rows, "--keys", keys)
			assert.Equal(t, exitUsage, res.code, res.stderr)
			assert.Empty(t, res.stdout)
			assertOneLine(t, res.stderr)
		})
	}
	res := runMain("", "resume", suspend(mine), "--answer", "true", "--host", "rows="+rows, "--keys", keys)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.JSONEq(t, `{"a":[1,2,3],"ok":true}`, res.stdout)
}

func readFileBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return b
}
