package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProductionDoorsLinkNoKit guards the seam between audiences: a
// program serving Sandbank (the HTTP server, the MCP server, the tenants
// they admit, the kit's report they list) links neither package testing,
// net/http/httptest, nor the conformance kit and its hostile fixtures.
// The kit reaches the server only as Options.Verify, wired by the
// program.
func TestProductionDoorsLinkNoKit(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		if goBin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go tool to list the packages' dependencies")
		}
	}
	const module = "github.com/sandbank/sandbank/"
	for _, pkg := range []string{"server", "mcpserver", "tenant", "conformance/verdict"} {
		t.Run(pkg, func(t *testing.T) {
			cmd := exec.Command(goBin, "list", "-deps", module+pkg)
			out, err := cmd.Output()
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			require.NoError(t, err, "go list -deps %s: %s", pkg, stderr)
			for _, dep := range strings.Fields(string(out)) {
				assert.False(t, dep == "testing" || strings.HasPrefix(dep, "testing/") ||
					dep == "net/http/httptest" ||
					dep == module+"conformance" ||
					dep == module+"fixtures" || strings.HasPrefix(dep, module+"fixtures/"),
					"%s links %s", pkg, dep)
			}
		})
	}
}
