//go:build !wasip1 && !linux

package main

import (
	"io"
	"os"
)

// serve: the native engine (backends/starlarknative) runs the guest on
// Linux only, where it can confine itself.
func serve() int {
	io.WriteString(os.Stderr, "guest: the native guest runs on Linux only\n")
	return 2
}

const gcPercent = 100
