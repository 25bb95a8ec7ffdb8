// Package cachetest keeps a test binary's wasm engines out of the real
// user cache directory: the backends keep their compiled modules in
// os.UserCacheDir()/sandbank by default (internal/wasm/cache), and a test
// must not write there. Import it from _test.go files only.
package cachetest

import (
	"fmt"
	"os"

	"github.com/sandbank/sandbank/internal/wasm/cache"
)

// Main runs m with the backends' default cache directory
// ($SANDBANK_CACHE_DIR) a temporary directory of its own, removed
// afterwards, and returns m's exit code: call it from TestMain as
// os.Exit(cachetest.Main(m)). Child processes inherit the environment.
func Main(m interface{ Run() int }) int {
	dir, err := os.MkdirTemp("", "sandbank-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachetest:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv(cache.EnvDir, dir); err != nil {
		fmt.Fprintln(os.Stderr, "cachetest:", err)
		return 2
	}
	return m.Run()
}
