//go:build linux && race

package python

// raceEnabled is true under -race.
const raceEnabled = true
