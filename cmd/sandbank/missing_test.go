package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/builtin"
)

// TestEnginesSaysWhatIsMissing: "engines" lists, after the table, the
// built-in engines this machine cannot run and why.
func TestEnginesSaysWhatIsMissing(t *testing.T) {
	a, _ := fakeApp(t)
	a.missing = func() []builtin.Unavailable {
		return []builtin.Unavailable{{Engine: "python", Language: "python", Reason: "python: bubblewrap (bwrap) is not installed"}}
	}
	res := cli(a, "", "engines")
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Contains(t, res.stdout, "Not available on this machine:\npython: bubblewrap (bwrap) is not installed\n")
}

// TestPythonScriptsAreLanguagePython: a .py script is run as "python".
func TestPythonScriptsAreLanguagePython(t *testing.T) {
	assert.Equal(t, "python", extLanguages[".py"])
}
