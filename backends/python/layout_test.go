//go:build linux

package python

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/spi"
)

// TestEveryExtensionModuleFindsItsLibraries: in the sandbox, every
// extension module of the standard library (but the terminal ones the
// probe leaves out) finds the shared libraries it needs: the probe
// found what the layout must bind. Seen failing with the probe loading
// no module (the sandbox then lacked libssl, libffi, libsqlite3...).
func TestEveryExtensionModuleFindsItsLibraries(t *testing.T) {
	b := backendOrSkip(t)
	const script = `import os, sys
dynload = [p for p in sys.path if p.endswith("lib-dynload")][0]
missing = []
for n in sorted(os.listdir(dynload)):
    mod = n.split(".", 1)[0]
    if not n.endswith(".so") or mod in ("_tkinter", "_curses", "_curses_panel", "readline"):
        continue
    try:
        __import__(mod)
    except ImportError as e:
        if "shared object" in str(e):
            missing.append(mod + ": " + str(e)[:120])
    except Exception:
        pass
missing`
	out, err := b.Evaluate(context.Background(), spi.Request{Script: []byte(script), Input: json.RawMessage("null"),
		Limits: spi.Limits{WallClock: time.Minute, MemoryBytes: 256 << 20}})
	require.NoError(t, err)
	require.Equal(t, spi.KindOK, out.Kind, "%+v", out)
	assert.Equal(t, "[]", string(out.Value))
}

// TestLinkResolverAgreesWithEvalSymlinks: the layout's resolution of a
// library directory's links gives filepath.EvalSymlinks's answer for
// each kind of link: to a file next to it, through a chain of them, to
// another directory, absolute, through a linked directory, and dangling.
// Seen failing with a link to a file next to it resolved to a wrong name.
func TestLinkResolverAgreesWithEvalSymlinks(t *testing.T) {
	root := t.TempDir()
	lib := filepath.Join(root, "lib")
	other := filepath.Join(root, "other")
	require.NoError(t, os.Mkdir(lib, 0o755))
	require.NoError(t, os.Mkdir(other, 0o755))
	for _, f := range []string{filepath.Join(lib, "libz.so.1.2.13"), filepath.Join(other, "libx.so.2")} {
		require.NoError(t, os.WriteFile(f, nil, 0o644))
	}
	for link, target := range map[string]string{
		"libz.so.1":  "libz.so.1.2.13",
		"libz.so":    "libz.so.1",
		"libz.so.0":  "libz.so",
		"libx.so":    "../other/libx.so.2",
		"libabs.so":  filepath.Join(lib, "libz.so.1.2.13"),
		"dangling":   "nothing",
		"self":       "self",
		"up":         "..",
		"libzz.so.1": "./libz.so.1",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(lib, link)))
	}
	// The directory as the probe may name it: through a link.
	via := filepath.Join(root, "via")
	require.NoError(t, os.Symlink("lib", via))
	entries, err := os.ReadDir(via)
	require.NoError(t, err)
	realDir, err := filepath.EvalSymlinks(via)
	require.NoError(t, err)
	r := newLinkResolver(via, realDir, entries)
	for _, e := range entries {
		if e.Type()&os.ModeSymlink == 0 {
			continue
		}
		want, wantErr := filepath.EvalSymlinks(filepath.Join(via, e.Name()))
		got, err := r.resolve(e.Name())
		if wantErr != nil {
			assert.Error(t, err, e.Name())
			continue
		}
		require.NoError(t, err, e.Name())
		assert.Equal(t, want, got, e.Name())
	}
}
