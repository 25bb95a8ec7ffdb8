//go:build cgo

package main

// buildHasCgo reports whether this binary was built with cgo, which
// the engines in cgoEngines need.
const buildHasCgo = true
