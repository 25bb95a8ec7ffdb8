//go:build !unix

package main

import "time"

// processCPU is 0 where the platform has no getrusage: the bench then
// leaves the CPU figures out.
func processCPU() time.Duration { return 0 }
