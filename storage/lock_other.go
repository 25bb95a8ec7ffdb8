//go:build !unix && !windows

package storage

import "os"

// tryLock takes no lock where the platform has no file lock the server
// uses (neither Unix nor Windows): one server per data directory is then
// the operator's to keep (docs/data-dir.md).
func tryLock(*os.File) (held bool, err error) { return false, nil }
