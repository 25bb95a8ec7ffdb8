//go:build !unix

package storage

// openNonBlock is not needed where there are no FIFOs to open: the Lstat
// and Stat checks refuse anything that is not a regular file.
const openNonBlock = 0
