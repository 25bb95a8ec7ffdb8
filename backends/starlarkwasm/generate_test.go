package starlarkwasm

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGuestIsFresh rebuilds the guest module exactly as go generate does
// and fails when the embedded guest.wasm differs: the build is
// reproducible (-trimpath, an empty build ID, no VCS stamp), so the bytes
// are a function of the sources and the toolchain. It runs only with the
// pinned toolchain (GuestToolchain), since another Go release builds other
// bytes; CI runs it with that one. It costs one wasip1 build (seconds with
// a warm build cache, about 40 s cold), so -short skips it.
func TestGuestIsFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilding the guest module takes up to a minute; CI runs it without -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	ver, err := exec.Command(goBin, "env", "GOVERSION").Output()
	require.NoError(t, err)
	if v := strings.TrimSpace(string(ver)); v != GuestToolchain {
		t.Skipf("the go command is %s; the guest module is pinned to %s, whose build alone is comparable", v, GuestToolchain)
	}
	out := filepath.Join(t.TempDir(), "guest.wasm")
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-buildid=", "-o", out, "./guest")
	cmd.Env = env
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "building the guest: %s", msg)
	built, err := os.ReadFile(out)
	require.NoError(t, err)
	if !bytes.Equal(built, guestWASM) {
		t.Fatalf("guest.wasm is stale: the sources build %d bytes, the embedded module is %d; run go generate ./backends/starlarkwasm", len(built), len(guestWASM))
	}
}
