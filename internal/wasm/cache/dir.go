package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DirName is the cache's directory under os.UserCacheDir.
const DirName = "sandbank"

// EnvDir names the environment variable that, when set, is the default
// directory instead of os.UserCacheDir()/sandbank: for a host whose user
// cache directory is not writable, and for tests (cachetest).
const EnvDir = "SANDBANK_CACHE_DIR"

// DefaultDir returns $SANDBANK_CACHE_DIR when set, else
// os.UserCacheDir()/sandbank, or "" when the platform has no user cache
// directory (no $HOME, no $XDG_CACHE_HOME).
func DefaultDir() string {
	if dir := os.Getenv(EnvDir); dir != "" {
		return dir
	}
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		return ""
	}
	return filepath.Join(dir, DirName)
}

// Prepare creates dir (mode 0700) when missing and checks that it is a
// directory that only its owner, the current user, can write: a compiled
// module read from it is run as machine code.
func Prepare(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("cache directory %s is not a directory", dir)
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("cache directory %s is writable by others (mode %v); use a directory only you can write", dir, info.Mode().Perm())
	}
	return ownedByMe(dir, info)
}

// ErrExclusive is Resolve's refusal of a directory and off together.
var ErrExclusive = errors.New("CacheDir and NoCache cannot be used together")

// Resolve is the directory a backend keeps its cache in: "" for none.
// off (a backend's NoCache option) means none. A dir set explicitly must
// pass Prepare, or Resolve fails; the default directory (dir empty) is
// used when it passes Prepare, and otherwise Resolve returns "" and no
// error: a backend without a cache only compiles more.
func Resolve(dir string, off bool) (string, error) {
	switch {
	case off && dir != "":
		return "", ErrExclusive
	case off:
		return "", nil
	case dir != "":
		if err := Prepare(dir); err != nil {
			return "", err
		}
		return dir, nil
	}
	dir = DefaultDir()
	if dir == "" || Prepare(dir) != nil {
		return "", nil
	}
	return dir, nil
}
