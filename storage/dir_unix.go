//go:build unix

package storage

import "syscall"

// openNonBlock makes opening a FIFO return at once instead of waiting for
// a writer.
const openNonBlock = syscall.O_NONBLOCK
