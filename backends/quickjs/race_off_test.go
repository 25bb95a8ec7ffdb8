//go:build !race

package quickjs

// raceEnabled: this test binary was built with -race (race_on_test.go).
const raceEnabled = false
