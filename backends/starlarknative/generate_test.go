package starlarknative

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestChildIsFresh rebuilds the children exactly as go generate does and
// fails when an embedded one differs: the build is reproducible
// (-trimpath, no symbols, an empty build ID, no VCS stamp, no cgo), so the
// bytes are a function of the sources and the toolchain. It runs only
// with the pinned toolchain (ChildToolchain). It costs two native builds
// (seconds with a warm build cache, about a minute cold), so -short skips
// it.
func TestChildIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilding the children takes up to a minute; CI runs it without -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	ver, err := exec.Command(goBin, "env", "GOVERSION").Output()
	require.NoError(t, err)
	if v := strings.TrimSpace(string(ver)); v != ChildToolchain {
		t.Skipf("the go command is %s; the children are pinned to %s, whose build alone is comparable", v, ChildToolchain)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "child")
			cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w -buildid=", "-o", out, "../starlarkwasm/guest")
			cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local", "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
			msg, err := cmd.CombinedOutput()
			require.NoError(t, err, "building the child: %s", msg)
			built, err := os.ReadFile(out)
			require.NoError(t, err)
			embedded, err := os.ReadFile("child_linux_" + arch)
			require.NoError(t, err)
			if !bytes.Equal(built, embedded) {
				t.Fatalf("child_linux_%s is stale: the sources build %d bytes, the embedded child is %d; run go generate ./backends/starlarknative", arch, len(built), len(embedded))
			}
		})
	}
}
