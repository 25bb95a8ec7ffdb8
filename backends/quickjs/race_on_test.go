//go:build race

package quickjs

// raceEnabled: this test binary was built with -race, whose shadow of
// every new linear memory mapping (each instance maps its own) is never
// returned, so the process's resident memory says nothing of the backend.
const raceEnabled = true
