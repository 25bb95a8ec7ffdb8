//go:build wasip1

package main

import "os"

// serve is the WebAssembly guest: its arguments are the run's (doc.go).
func serve() int { return run(os.Args, os.Stdin, os.Stdout, os.Stderr) }

// gcPercent: the collector runs only as the heap nears the memory limit.
// One run is short and its instance's memory is restored (or dropped)
// after it, so collecting on the heap's growth alone (GOGC=100) is work
// the run does not need; in WebAssembly it was a fifth of a reshape's
// time (docs/performance.md, issue 43).
const gcPercent = -1
