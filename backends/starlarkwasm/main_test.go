package starlarkwasm

import (
	"os"
	"testing"

	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
)

// TestMain keeps the backends' default cache directory out of the user's
// (cachetest.Main).
func TestMain(m *testing.M) { os.Exit(cachetest.Main(m)) }
