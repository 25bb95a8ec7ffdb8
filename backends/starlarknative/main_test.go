package starlarknative_test

import (
	"os"
	"testing"

	"github.com/sandbank/sandbank/backends/starlarknative"
)

// TestMain skips the package's tests where the engine cannot run, saying
// why.
func TestMain(m *testing.M) {
	if err := starlarknative.Available(); err != nil {
		os.Stdout.WriteString("skipping: " + err.Error() + "\n")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
