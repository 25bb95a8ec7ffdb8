package effect

import (
	"context"

	"github.com/sandbank/sandbank/record"
)

// ScriptReader fetches script bytes by content address. A script that is
// not there is reported with an error for which errors.Is(err,
// fs.ErrNotExist) holds.
type ScriptReader interface {
	ReadScript(ctx context.Context, addr record.Address) ([]byte, error)
}

// InstantReader is a ScriptReader that answers at once: its ReadScript
// neither blocks nor panics (storage.MemoryStore is one). The effect calls
// it on the caller's goroutine; any other ScriptReader is raced against
// the call's context on a goroutine of its own, like the backend.
type InstantReader interface {
	ScriptReader
	// ReadsInstantly marks the reader as one; the effect never calls it.
	ReadsInstantly()
}
