package jsguest

// The start-up phases a run goes through before the script starts, on
// either runtime; each engine package's StartupError names the one it
// was in.
const (
	PhaseCompile     = "compile"
	PhaseInstantiate = "instantiate"
	PhaseBoot        = "boot"
	PhaseInput       = "input"
	PhaseScript      = "script"
)
