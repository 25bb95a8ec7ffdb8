//go:build race

package goja_test

// raceEnabled is true when the tests run under the race detector, which
// makes goja about ten times slower.
const raceEnabled = true
