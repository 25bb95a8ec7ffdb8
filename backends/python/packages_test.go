//go:build linux

package python_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/spi"
)

// dataPackages are the packages the data tests allow.
var dataPackages = []string{"matplotlib", "numpy", "pandas"}

// needPackages skips a test where the system's interpreter lacks the
// data packages (Debian: python3-numpy, python3-pandas,
// python3-matplotlib), except in CI (CI=true), which installs them: a
// test that skips there is a failure.
func needPackages(t *testing.T) {
	t.Helper()
	needSandbox(t)
	err := exec.Command("/usr/bin/python3", "-c", "import numpy, pandas, matplotlib").Run()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI must install python3-numpy, python3-pandas and python3-matplotlib for /usr/bin/python3: %v", err)
	}
	t.Skipf("/usr/bin/python3 cannot import numpy, pandas and matplotlib (Debian: apt-get install python3-numpy python3-pandas python3-matplotlib): %v", err)
}

// newDataBackend returns a backend allowing dataPackages.
func newDataBackend(t *testing.T, packages ...string) *python.Backend {
	t.Helper()
	needPackages(t)
	b, err := python.New(&python.Options{Python: "/usr/bin/python3", Packages: packages})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	require.NoError(t, b.Warm(ctx))
	return b
}

// TestPackagesImportOnlyTheListed: the listed packages (and what they
// import) import; a package of the same site directory that is not
// listed is ModuleNotFoundError.
func TestPackagesImportOnlyTheListed(t *testing.T) {
	b := newDataBackend(t, "numpy")
	out := eval(t, b, "import numpy\nint(numpy.arange(10).sum())", "null")
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	assert.Equal(t, "45", string(out.Value))
	for _, unlisted := range []string{"pandas", "matplotlib", "yaml", "PIL"} {
		out = eval(t, b, "import "+unlisted, "null")
		assert.Equal(t, spi.KindThrew, out.Kind, unlisted)
		assert.Equal(t, "ModuleNotFoundError", out.Name, unlisted)
	}
}

// TestPackagesLeaveOtherSiteDirectoriesOff: with a package listed that
// needs no numpy (cycler), numpy is ModuleNotFoundError, although Debian's
// python3-numpy leaves a fragment of it in /usr/lib/python3.X/dist-packages,
// inside the standard library the sandbox binds: only the site
// directories holding a listed package's entries are on sys.path.
func TestPackagesLeaveOtherSiteDirectoriesOff(t *testing.T) {
	b := newDataBackend(t, "cycler")
	out := eval(t, b, "import cycler\nlen(cycler.cycler(c=[1, 2]))", "null")
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	assert.Equal(t, "2", string(out.Value))
	out = eval(t, b, "import numpy", "null")
	assert.Equal(t, spi.KindThrew, out.Kind, "%+v", out)
	assert.Equal(t, "ModuleNotFoundError", out.Name, "%+v", out)
}

// TestPackagesKeepTheRunDeterministic: with the packages preloaded, each
// run sees the same seeded numpy and random, the fake clock, and a
// single thread.
func TestPackagesKeepTheRunDeterministic(t *testing.T) {
	b := newDataBackend(t, dataPackages...)
	script := `import numpy as np, random, time, threading, secrets
[np.random.rand(), float(np.random.default_rng().random()), random.random(), secrets.token_hex(4), time.time(), threading.active_count()]`
	first := eval(t, b, script, "null")
	require.Equal(t, spi.KindOK, first.Kind, "%+v", first)
	second := eval(t, b, script, "null")
	require.Equal(t, spi.KindOK, second.Kind, "%+v", second)
	assert.Equal(t, string(first.Value), string(second.Value), "the same in every run")
	var got []any
	require.NoError(t, json.Unmarshal(first.Value, &got))
	assert.Equal(t, 0.5488135039273248, got[0], "numpy's global generator seeded with Options.Seed (0)")
	assert.Equal(t, 0.8444218515250481, got[2], "random seeded with Options.Seed (0)")
	assert.InDelta(t, 946684800.001, got[4], 0.0005, "the fake clock")
	assert.Equal(t, 1.0, got[5], "one thread")
	other, err := python.New(&python.Options{Python: "/usr/bin/python3", Packages: dataPackages, Seed: 7})
	require.NoError(t, err)
	defer other.Close()
	seeded := eval(t, other, script, "null")
	require.Equal(t, spi.KindOK, seeded.Kind, "%+v", seeded)
	assert.NotEqual(t, string(first.Value), string(seeded.Value), "Options.Seed seeds them")
}

func TestPackagesRefused(t *testing.T) {
	_, err := python.New(&python.Options{Packages: []string{"../x"}})
	assert.ErrorContains(t, err, "top-level import name")
	needSandbox(t)
	b, err := python.New(&python.Options{Python: "/usr/bin/python3", Packages: []string{"no_such_package_sandbank"}})
	require.NoError(t, err)
	defer b.Close()
	assert.ErrorContains(t, b.Warm(context.Background()), "cannot be used")
}
