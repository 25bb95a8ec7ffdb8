//go:build !linux

package extism

// reserve is nil where this package maps no memory of its own: linear
// memories grow on the Go heap.
func reserve(uint64) []byte { return nil }

// unreserve is never called where reserve maps nothing.
func unreserve([]byte) {}
