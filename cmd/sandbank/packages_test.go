package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/registry"
)

// TestRunPackage: --package lets a python script import the system's
// package, which it cannot without; on another engine it is a usage
// error.
func TestRunPackage(t *testing.T) {
	a, _ := fakeApp(t)
	res := cli(a, "1", "run", "--package", "numpy", "--lang", "javascript", "-")
	assert.Equal(t, exitUsage, res.code, res.stderr)
	assert.Contains(t, res.stderr, "takes no packages")

	skipWithoutPython(t)
	if exec.Command("/usr/bin/python3", "-c", "import numpy").Run() != nil {
		t.Skip("/usr/bin/python3 has no numpy (Debian: python3-numpy)")
	}
	reg := &registry.Registry{}
	builtin.Register(reg)
	a, _ = fakeApp(t)
	a.newRegistry = func() (*registry.Registry, error) { return reg, nil }
	path := filepath.Join(t.TempDir(), "np.py")
	require.NoError(t, os.WriteFile(path, []byte("import numpy\nint(numpy.arange(4).sum())\n"), 0o600))
	res = cli(a, "", "run", "--no-cache", "--package", "numpy", path)
	require.Equal(t, exitOK, res.code, res.stderr)
	assert.Equal(t, "6\n", res.stdout)
	res = cli(a, "", "run", "--no-cache", path)
	assert.NotEqual(t, exitOK, res.code)
	assert.Contains(t, res.stderr, "ModuleNotFoundError")
}
