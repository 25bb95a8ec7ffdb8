package starlarkguest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/sandbank/sandbank/spi"
)

// A script's host call crosses the guest boundary as a host-call record
// on the guest's stdout; the guest then blocks reading its stdin, whose
// reader (wasmguest.Stdin) takes the record, asks the broker and serves
// the reply. The host's side of that read (inside the guest's read in
// wazero, or the native engine's reader of the child's stdout) must
// return when the run is stopped, whatever the broker does:
// StoppableHost sees to it.

// ErrStoppedInCall is the reply to a call the run stopped waiting for;
// the script never runs on after it (the guest is being stopped).
var ErrStoppedInCall = errors.New("starlark guest: the run was stopped during a host call")

// StoppableHost relays calls to the request's broker, and stops waiting
// for one as soon as the run's context is done (the wall clock, the
// caller's cancellation, Close). A broker call it stopped waiting for
// finishes on its own goroutine; no call is made after the run ended,
// since the guest makes its calls one at a time and is stopped then.
type StoppableHost struct {
	Inner spi.Host
}

// Call implements spi.Host.
func (h *StoppableHost) Call(ctx context.Context, name string, args json.RawMessage) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, ErrStoppedInCall
	}
	type answer struct {
		text json.RawMessage
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		text, err := h.Inner.Call(ctx, name, args)
		ch <- answer{text, err}
	}()
	select {
	case a := <-ch:
		return a.text, a.err
	case <-ctx.Done():
		return nil, ErrStoppedInCall
	}
}
