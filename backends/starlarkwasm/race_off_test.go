//go:build !race

package starlarkwasm

// raceEnabled: the race detector slows the host side of every run.
const raceEnabled = false
