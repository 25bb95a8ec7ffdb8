//go:build !cgo

package builtin

// withCgoEngines returns the engine names a build without cgo registers:
// names, unchanged.
func withCgoEngines(names []string) []string { return names }
