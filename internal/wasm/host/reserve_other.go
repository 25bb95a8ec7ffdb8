//go:build !linux

package host

// Reserve maps nothing where the platform is not Linux: linear memories
// grow on the Go heap.
func Reserve(uint64) []byte { return nil }

// Unreserve is never needed where Reserve maps nothing.
func Unreserve([]byte) {}
