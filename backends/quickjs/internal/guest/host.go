package guest

import (
	"context"

	"github.com/sandbank/sandbank/internal/wasmguest"
	"github.com/sandbank/sandbank/spi"
)

// Host calls over the framed stdio protocol (SPI 1.1): the wrapper writes
// an H record on stdout and blocks reading stdin; the run's stdin reader
// (wasmguest.Stdin) takes the record, asks the broker and serves the
// reply (see internal/wasmguest/hostcall.go for the record and the reply).

// Stdin is a run's stdin: the payload, then host-call replies.
type Stdin = wasmguest.Stdin

// NewStdin returns the stdin of a run (see wasmguest.NewStdin).
func NewStdin(ctx context.Context, payload []byte, stdout *Stdout, host spi.Host) *Stdin {
	return wasmguest.NewStdin(ctx, payload, stdout, host)
}
