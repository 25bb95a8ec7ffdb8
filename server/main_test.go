package server

import (
	"os"
	"testing"

	"github.com/sandbank/sandbank/internal/wasm/cache/cachetest"
)

// TestMain keeps the wasm engines' default cache directory out of the
// user's (cachetest.Main). Run again by TestCrashKeepsWhatWasAnswered, it
// is the server it kills (crashChild).
func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		os.Exit(crashChild(dir))
	}
	os.Exit(cachetest.Main(m))
}
