//go:build unix

package jsfront

import "syscall"

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
