// Package cachetest keeps a test binary's wasm engines out of the real
// user cache directory: the backends keep their compiled modules in
// os.UserCacheDir()/sandbank by default (internal/wasm/cache), and a test
// must not write there. Import it from _test.go files only.
package cachetest

import (
	"fmt"
	"os"
)

// userCacheEnv lists the variables os.UserCacheDir reads, on every
// platform.
var userCacheEnv = []string{"XDG_CACHE_HOME", "HOME", "LocalAppData", "home"}

// Main runs m with the user cache directory (and so the backends'
// default cache directory) in a temporary directory of its own, removed
// afterwards, and returns m's exit code: call it from TestMain as
// os.Exit(cachetest.Main(m)). Child processes inherit the environment.
func Main(m interface{ Run() int }) int {
	dir, err := os.MkdirTemp("", "sandbank-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cachetest:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	for _, v := range userCacheEnv {
		if err := os.Setenv(v, dir); err != nil {
			fmt.Fprintln(os.Stderr, "cachetest:", err)
			return 2
		}
	}
	return m.Run()
}

// SetUserCacheDir points the user cache directory, and so the backends'
// default cache directory, under dir for one test (os.UserCacheDir then
// returns dir on Linux, dir/Library/Caches on macOS): t is its
// *testing.T, whose Setenv restores the variables afterwards.
func SetUserCacheDir(t interface{ Setenv(key, value string) }, dir string) {
	for _, v := range userCacheEnv {
		t.Setenv(v, dir)
	}
}
