//go:build unix

package cache

import (
	"fmt"
	"os"
	"syscall"
)

// ownedByMe checks that the current user owns the cache directory.
func ownedByMe(dir string, info os.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("cache directory %s belongs to user %d, not to you (%d)", dir, st.Uid, uid)
	}
	return nil
}
