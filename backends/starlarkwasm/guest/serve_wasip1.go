//go:build wasip1

package main

import "os"

// serve is the WebAssembly guest: its arguments are the run's (doc.go).
func serve() int { return run(os.Args, os.Stdin, os.Stdout, os.Stderr) }
