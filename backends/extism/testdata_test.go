package extism

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTestdataMatchesSources rebuilds every testdata .wat with wat2wasm into
// a temporary directory and fails when the committed .wasm differs.
func TestTestdataMatchesSources(t *testing.T) {
	wats, err := filepath.Glob(filepath.Join("testdata", "*.wat"))
	require.NoError(t, err)
	wasms, err := filepath.Glob(filepath.Join("testdata", "*.wasm"))
	require.NoError(t, err)
	require.Len(t, wasms, len(wats), "every testdata .wasm needs its .wat and the other way round")
	tool, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not installed (Debian package wabt), so the committed testdata .wasm files cannot be checked against their .wat sources")
	}
	dir := t.TempDir()
	for _, src := range wats {
		name := strings.TrimSuffix(filepath.Base(src), ".wat")
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name+".wasm")
			msg, err := exec.Command(tool, src, "-o", out).CombinedOutput()
			require.NoError(t, err, "wat2wasm %s: %s", src, msg)
			built, err := os.ReadFile(out)
			require.NoError(t, err)
			committed, err := os.ReadFile(filepath.Join("testdata", name+".wasm"))
			require.NoError(t, err)
			assert.True(t, bytes.Equal(built, committed), "testdata/%s.wasm differs from its .wat; run go generate ./backends/extism/", name)
		})
	}
}
