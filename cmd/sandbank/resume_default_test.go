package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResumeNeedsOnlyTheAnswer: README's approval flow: a run that waits
// at its only host function resumes with nothing but --answer (it was
// refused, exit 64, for want of host functions); the function it waits
// at suspends again when the script calls it anew, the continuation
// rewritten in place.
func TestResumeNeedsOnlyTheAnswer(t *testing.T) {
	js := script(t, "purge.js", `const a = await host.approve(1);
const b = await host.approve(2);
a && b ? "purged" : "kept"`)
	wait := filepath.Join(t.TempDir(), "wait.json")
	res := runMain("", "run", "--engine", "quickjs", "--suspend", "approve", "--continuation", wait, js)
	require.Equal(t, exitSuspend, res.code, res.stderr)
	res = runMain("", "resume", wait, "--answer", "true")
	require.Equal(t, exitSuspend, res.code, res.stderr)
	res = runMain("", "resume", wait, "--answer", "true")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, `"purged"`+"\n", res.stdout)
}
