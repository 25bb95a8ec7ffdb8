package effect

// InstantReader is a ScriptReader that answers at once: its ReadScript
// neither blocks nor panics (storage.MemoryStore is one). The effect calls
// it on the caller's goroutine; any other ScriptReader is raced against
// the call's context on a goroutine of its own, like the backend.
type InstantReader interface {
	ScriptReader
	// ReadsInstantly marks the reader as one; the effect never calls it.
	ReadsInstantly()
}
